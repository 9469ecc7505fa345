#!/usr/bin/env python3
"""OpenFHE CKKS side-by-side for bench_ckks --large (issue 3, benchmark 3).

Same shape as configs/params/n16-128.yaml: N = 2^16, first modulus 60 bits,
34 scaling moduli of 40 bits, hybrid key switching with dnum = 7, fixed manual
rescaling, one thread (OMP_NUM_THREADS=1). Prints CPU milliseconds per
operation as JSON. OpenFHE chooses its own special primes, so log2(QP) differs
slightly from ours. Run with the Python that has the `openfhe` wheel.
"""
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import openfhe as of  # noqa: E402


def cpu_ms(fn, reps):
    fn()
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - t0) * 1000.0 / reps


def main():
    quick = "--quick" in sys.argv
    p = of.CCParamsCKKSRNS()
    p.SetMultiplicativeDepth(34)
    p.SetScalingModSize(40)
    p.SetFirstModSize(60)
    p.SetRingDim(1 << 16)
    p.SetBatchSize(1 << 15)
    p.SetNumLargeDigits(7)
    p.SetScalingTechnique(of.FIXEDMANUAL)
    p.SetKeySwitchTechnique(of.HYBRID)
    p.SetSecurityLevel(of.HEStd_NotSet)
    cc = of.GenCryptoContext(p)
    for feat in (of.PKESchemeFeature.PKE, of.PKESchemeFeature.KEYSWITCH,
                 of.PKESchemeFeature.LEVELEDSHE):
        cc.Enable(feat)
    keys = cc.KeyGen()
    cc.EvalMultKeyGen(keys.secretKey)
    cc.EvalRotateKeyGen(keys.secretKey, [1])
    x = [0.5 * ((i % 97) / 97.0) for i in range(1 << 15)]
    pt = cc.MakeCKKSPackedPlaintext(x)
    a = cc.Encrypt(keys.publicKey, pt)
    b = cc.Encrypt(keys.publicKey, pt)
    reps = 1 if quick else 3
    res = {
        "library": "openfhe-python " + getattr(of, "__version__", "1.6.1"),
        "threads": 1,
        "ring_dim": cc.GetRingDimension(),
        "mult_relin_ms": cpu_ms(lambda: cc.EvalMult(a, b), reps),
        "rotate_ms": cpu_ms(lambda: cc.EvalRotate(a, 1), reps),
        "rescale_ms": cpu_ms(lambda: cc.Rescale(cc.EvalMult(a, b)), reps),
    }
    res["rescale_ms"] -= res["mult_relin_ms"]
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
