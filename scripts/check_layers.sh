#!/usr/bin/env bash
# Keep the dependency arrows of CONVENTIONS.md honest by reading #include lines.
#   core/: base -> math -> {backend, ring} -> {rlwe, serial} -> {ckks, tfhe}
#          -> circuits -> convert -> nonlinear -> sched -> llm
# A file in core/<m>/ may include core/<n>/ only when rank(n) < rank(m), or
# n == m, or (m, n) is one of the sideways pairs below. core/ never includes
# server/, client/, proto/ or gpu/ (nor their generated code).
# Usage: scripts/check_layers.sh [ROOT]   (exit 1 and one line per violation)
set -uo pipefail
root=${1:-.}
cd "$root" || exit 2
declare -A rank=([base]=0 [math]=1 [backend]=2 [ring]=2 [rlwe]=3 [serial]=3 [ckks]=4 [tfhe]=4
                 [circuits]=5 [convert]=6 [nonlinear]=7 [sched]=8 [llm]=9)
sideways=" ring>backend rlwe>serial "
bad=0
while IFS= read -r f; do
    m=$(echo "$f" | cut -d/ -f2)
    if [ -z "${rank[$m]+x}" ]; then
        echo "check-layers: $f: core/$m is not a known layer (add it to scripts/check_layers.sh)"
        bad=1; continue
    fi
    while IFS=: read -r ln inc; do
        target=$(echo "$inc" | sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/p')
        [ -z "$target" ] && continue
        case "$target" in
            server/*|client/*|proto/*|gpu/*|*.pb-c.h|../*)
                echo "check-layers: $f:$ln: core/ must not include \"$target\" (outer layer)"
                bad=1; continue ;;
            core/*)
                n=$(echo "$target" | cut -d/ -f2)
                if [ -z "${rank[$n]+x}" ]; then
                    echo "check-layers: $f:$ln: includes unknown layer \"$target\""; bad=1; continue
                fi
                if [ "$n" = "$m" ] || [ "${rank[$n]}" -lt "${rank[$m]}" ] || [[ "$sideways" == *" $m>$n "* ]]; then
                    continue
                fi
                echo "check-layers: $f:$ln: core/$m (rank ${rank[$m]}) must not include \"$target\" (core/$n, rank ${rank[$n]}): includes point down the chain base -> math -> backend/ring -> rlwe/serial -> ckks/tfhe -> circuits -> convert -> nonlinear -> sched -> llm"
                bad=1 ;;
        esac
    done < <(grep -n '#[[:space:]]*include' "$f")
done < <(find core -name '*.c' -o -name '*.h' | sort)
# Outside core/, only the public face of a core module may be included:
# core/<m>/<m>.h (internal *_int.h headers stay inside their module).
while IFS=: read -r f ln inc; do
    target=$(echo "$inc" | sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"(core\/[^"]+)".*/\1/p')
    [ -z "$target" ] && continue
    case "$target" in *_int.h)
        echo "check-layers: $f:$ln: \"$target\" is internal to its module; include the module's public header"
        bad=1 ;;
    esac
done < <(grep -rn '#[[:space:]]*include' server client gpu 2>/dev/null)
if [ $bad -ne 0 ]; then
    echo "check-layers: FAILED"
    exit 1
fi
echo "check-layers: ok ($(find core -name '*.c' -o -name '*.h' | wc -l) files in core/)"
