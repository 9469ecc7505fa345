#!/usr/bin/env bash
# The n-gram draft's acceptance on aidreams260K, in plaintext (speculative
# decoding keeps exactly the guesses the sampler draws, so `tessera run
# --draft-lookup` replays what `tessera generate --draft-lookup` would do):
# for each prompt, the draft alone (the text so far) and with a history of
# the other prompts' generations (--draft-text: as if the user had run them
# before; encrypted greedy decoding gives the plaintext ids), at several
# context lengths and lane counts; the passes right after a one-position
# step (passes_after_step) are counted apart, since they refresh the step's
# cache rows (a pass after a pass does not). A third source, where the
# model's host publishes one (BENCH_DRAFT_TEXT; for the bundled model the
# build's BUILD_DIR/models/aidreams260K.draft.txt, the greedy generations of
# models/aidreams260K.draft-prompts.txt, none of them a prompt below): that
# text instead of the history (`tessera generate --draft-published`, a
# first-time user's draft). Writes one JSON report.
# BENCH_TEMPERATURE=T samples the replayed generations at T (seed 1; the
# history stays greedy). BENCH_PLAN_PARAMS=PRESET (e.g. boot-n16-dense) also
# prices each configuration from the engine's plans at that preset (`tessera
# plan`: the lanes engine's ordinary step, its pass right after a step and
# its pass after a pass, under the preset's shipped cost table) and reports
# the predicted seconds per token (a llama2.c model: its dim sets the slots).
#
# Usage: scripts/bench_draft.sh [BUILD_DIR] [OUT.json]
set -euo pipefail
build=${1:-build}
out=${2:-draft-acceptance.json}
tessera=$build/tessera
model=${BENCH_MODEL:-../shared/models/aidreams260K.bin}
[ -f "$model" ] || model=models/aidreams260K.bin
tok=${BENCH_TOKENIZER:-../shared/models/tok512.bin}
[ -f "$tok" ] || tok=models/tok512.bin
temp=${BENCH_TEMPERATURE:-0}
published=${BENCH_DRAFT_TEXT:-}
if [ -z "$published" ] && [ "$(basename "$model")" = aidreams260K.bin ]; then
    published=$build/models/aidreams260K.draft.txt
fi
sources=(text history)
[ -n "$published" ] && [ -f "$published" ] && sources+=(published)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prompts=("I dream of" "Once upon a time" "The sea" "In the night" "My heart" "The stars"
    "A river" "We walk" "Light and shadow" "The machine" "Silence" "In my mind"
    "The city sleeps" "Time flows" "Colors" "A forest" "Whispers" "The moon" "Deep inside"
    "Memories of")
# each prompt's greedy generation over the model's whole context, one line
for i in "${!prompts[@]}"; do
    "$tessera" run --model "$model" --tokenizer "$tok" --prompt "${prompts[$i]}" 2>/dev/null |
        tr '\n' ' ' >"$work/gen$i.txt"
    echo >>"$work/gen$i.txt"
done
: >"$work/rows.jsonl"
for i in "${!prompts[@]}"; do
    : >"$work/hist$i.txt"
    for j in "${!prompts[@]}"; do [ "$j" = "$i" ] || cat "$work/gen$j.txt" >>"$work/hist$i.txt"; done
    for n in 32 128; do
        for lanes in 8 16; do
            for src in "${sources[@]}"; do
                case $src in
                text) flags=(--draft-lookup) ;;
                history) flags=(--draft-text "$work/hist$i.txt") ;;
                published) flags=(--draft-text "$published") ;;
                esac
                "$tessera" run --model "$model" --tokenizer "$tok" --prompt "${prompts[$i]}" \
                    --steps "$n" --lanes "$lanes" --temperature "$temp" "${flags[@]}" --json \
                    2>/dev/null |
                    python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["speculative"]
s.update(prompt=sys.argv[1], positions=int(sys.argv[2]), draft=sys.argv[3],
         history=sys.argv[3]=="history", prompt_tokens=d["prompt_tokens"],
         temperature=d["temperature"]); print(json.dumps(s))' \
                        "${prompts[$i]}" "$n" "$src" >>"$work/rows.jsonl"
            done
        done
    done
done
python3 - "$work/rows.jsonl" "$out" "$(uname -m)" "$(nproc)" "$tessera" "$model" \
    "${BENCH_PLAN_PARAMS:-}" "$([[ " ${sources[*]} " == *" published "* ]] && echo "$published")" <<'PY'
import json, struct, subprocess, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
tessera, model, plan_params, published = sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8]
plans = {}


def plan_s(positions, lanes):
    """Predicted seconds of (step, pass after a step, pass after a pass), or None."""
    if not plan_params or not model.endswith(".bin"):
        return None
    if (positions, lanes) in plans:
        return plans[(positions, lanes)]
    with open(model, "rb") as f:
        dim = struct.unpack("<i", f.read(4))[0]
    slots = 1
    while slots < dim:
        slots *= 2
    base = [tessera, "plan", "--model", model, "--params", plan_params, "--policy", "ckks",
            "--slots", str(slots * positions), "--json"]
    out = []
    for extra in (["--lanes", str(lanes), "--pos", str(positions - 1)],
                  ["--prefill", str(lanes), "--pos", str(positions - lanes), "--after-steps"],
                  ["--prefill", str(lanes), "--pos", str(positions - lanes)]):
        r = subprocess.run(base + extra, capture_output=True, text=True)
        if r.returncode != 0:
            out = None
            break
        out.append(json.loads(r.stdout)["predicted_ns"] / 1e9)
    plans[(positions, lanes)] = out
    return out


agg = collections.OrderedDict()
for r in rows:
    k = (r["positions"], r["lanes"], r["draft"])
    a = agg.setdefault(k, dict(positions=k[0], lanes=k[1], draft=k[2],
                               history=k[2] == "history", prompts=0, tokens=0,
                               passes=0, passes_after_step=0, steps=0, drafted=0, kept=0))
    a["prompts"] += 1
    for f in ("tokens", "passes", "passes_after_step", "steps", "drafted", "kept"):
        a[f] += r[f]
summary = []
dname = {"text": "text so far   ", "history": "with history  ", "published": "published text"}
for a in agg.values():
    enc = a["passes"] + a["steps"]
    a["encrypted_steps_per_token"] = round(enc / a["tokens"], 4) if a["tokens"] else 0
    a["kept_per_pass"] = round(a["kept"] / a["passes"], 3) if a["passes"] else 0
    ps = plan_s(a["positions"], a["lanes"])
    if ps and a["tokens"]:
        after = a["passes_after_step"]
        a["plan"] = {"params": plan_params, "step_s": round(ps[0], 2),
                     "pass_after_step_s": round(ps[1], 2), "pass_after_pass_s": round(ps[2], 2),
                     "predicted_s_per_token": round((a["steps"] * ps[0] + after * ps[1] +
                                                     (a["passes"] - after) * ps[2]) /
                                                    a["tokens"], 2)}
    summary.append(a)
    print(f"{a['positions']:4d} positions, {a['lanes']:2d} lanes, "
          f"{dname[a['draft']]}: {a['tokens']} tokens in "
          f"{a['passes']} passes ({a['passes_after_step']} right after a step; "
          f"{a['kept']} guesses kept, {a['kept_per_pass']} per pass) + "
          f"{a['steps']} one-position steps = {a['encrypted_steps_per_token']} encrypted steps "
          f"per token" + (f"; planned at {plan_params}: {a['plan']['predicted_s_per_token']} s "
                          f"per token" if "plan" in a else ""))
json.dump({"benchmark": "draft-acceptance", "temperature": rows[0]["temperature"] if rows else 0,
           "plan_params": plan_params or None, "published_text": published or None,
           "machine": {"arch": sys.argv[3], "cpus": int(sys.argv[4])},
           "summary": summary, "rows": rows}, open(sys.argv[2], "w"), indent=1)
PY
echo "wrote $out"
