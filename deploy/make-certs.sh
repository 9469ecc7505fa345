#!/usr/bin/env bash
# Make a test CA, a server certificate and client certificates with the openssl CLI.
#   deploy/make-certs.sh DIR [SERVER_NAME [CLIENT_NAME...]]
# Writes DIR/ca.{crt,key}, DIR/server.{crt,key} (subjectAltName SERVER_NAME, default
# "localhost", plus IP 127.0.0.1 and ::1) and DIR/<client>.{crt,key} for each client name
# (default "client"). Keys are EC P-256, mode 0600. For tests and first deployments; use
# your own PKI in production.
set -euo pipefail
dir=${1:?usage: make-certs.sh DIR [SERVER_NAME [CLIENT_NAME...]]}
server=${2:-localhost}
shift $(( $# >= 2 ? 2 : $# ))
clients=("$@")
[ ${#clients[@]} -eq 0 ] && clients=(client)
mkdir -p "$dir"
umask 077
cd "$dir"
days=825
newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

newkey ca.key
openssl req -x509 -new -key ca.key -sha256 -days "$days" -subj "/CN=tessera test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.crt 2>/dev/null

sign() { # name cn ext
    newkey "$1.key"
    openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
    printf '%s\n' "$3" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 \
        -days "$days" -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
}

sign server "$server" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:$server,IP:127.0.0.1,IP:::1"
for c in "${clients[@]}"; do
    sign "$c" "$c" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
done
rm -f ca.srl
chmod 600 ./*.key
chmod 644 ./*.crt
echo "make-certs: wrote $(pwd)/{ca,server$(printf ',%s' "${clients[@]}")}.{crt,key}"
