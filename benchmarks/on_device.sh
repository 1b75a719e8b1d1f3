#!/usr/bin/env bash
# Every part of jaxcompare on a borrowed accelerator machine, from the checkout, in one script:
#
#     benchmarks/on_device.sh setup check cli hand pages
#
# Parts: setup (the engine's and the pages' wheels from .whl-tpu/ into /tmp/site, where that
# machine has no network), engine (the engine's wheels alone), check (benchmarks/device_check.py, the report), cli (run at both
# precisions, a float64 case the TPU lacks, --profile, sweep, pitfalls, import of the check's JSON),
# hand (benchmarks/hand_protocol.py: the tool beside the docs' lines typed in a plain process), pages (the
# AppTest page tests; such a machine allows no socket, so no server or browser), ports (the cases
# with several JAX ports, every port), atlas (`jaxcompare atlas --devices tpu` into $OUT, resumed from
# $ATLAS_FROM and stopped by Ctrl-C at ATLAS_UNTIL seconds into the script), probe (benchmarks/tpu_kept_probe.py),
# b2b (benchmarks/tpu_b2b_probe.py: the tool's back-to-back loop against the hand's, in one process), samples
# (benchmarks/tpu_kept_samples_probe.py: the kept NumPy figure's short samples, call by call). Each part's output
# goes to $OUT/PART.log (OUT defaults to ./on-device), and $OUT/summary.txt lists each step's exit
# status and seconds. CHECK_BUDGET bounds the device check (seconds, default 390); PORT_SPECS (CASE:SHAPE ...)
# and PORT_ARGS choose the ports part's cases and add options (--profile DIR), PORT_LAB (CASE:SHAPE ...) the
# cases whose pitfall 8 the lab measures after them; HAND_ARGS the hand protocol's.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/on-device}
mkdir -p "$OUT"
PY=${PY:-python3}
DB="$OUT/results.sqlite3"
export PYTHONUNBUFFERED=1
# After the machine's own JAX, so that a JAX that pip brought along does not hide it.
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site

step() {  # step PART NAME COMMAND...: runs it, logs its output, notes its exit status and time
    local part=$1 name=$2
    shift 2
    local start=$SECONDS
    echo "=== $name: $*" >>"$OUT/$part.log"
    "$@" >>"$OUT/$part.log" 2>&1
    local rc=$?
    printf '%-28s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - start))" | tee -a "$OUT/summary.txt"
}

setup() {
    if [ ! -d /tmp/site/streamlit ]; then
        # The machine's own index holds pandas and pyarrow (too large to carry); the rest travels.
        PIP_CONFIG_FILE=/dev/null $PY -m pip install --isolated -q --no-cache-dir --only-binary=:all: \
            --index-url file:///opt/pypi/simple --find-links .whl-tpu --target /tmp/site \
            streamlit altair psutil threadpoolctl cloudpickle babel pytest-timeout pytest-xdist pandas pyarrow
    fi
}

ports() {  # each case with several ports (PORT_SPECS), every port on the device, each under its own deadline
    local jc=("$PY" -m jaxcompare) spec
    for spec in ${PORT_SPECS:-matmul:4096x4096 elementwise:4194304 logsumexp:2000x2000 cumsum:1000000 cdist:1000x64}; do
        # shellcheck disable=SC2086  # PORT_ARGS: more options, e.g. "--profile /tmp/trace"
        step ports "ports-${spec%%:*}" "${jc[@]}" run --case "${spec%%:*}" --shape "${spec#*:}" --ports all \
            --quick --timeout "${PORT_TIMEOUT:-120}" --save --db "$DB" --json "$OUT/ports-${spec%%:*}.json" ${PORT_ARGS:-}
    done
    for spec in ${PORT_LAB:-}; do  # pitfall 8 in the lab: the case's first port beside the fastest of its ports
        step ports "lab-${spec%%:*}" "${jc[@]}" pitfalls --case "${spec%%:*}" --shape "${spec#*:}" --sections ports \
            --quick --timeout 300 --json "$OUT/lab-ports-${spec%%:*}.json"
    done
}

engine() {  # the engine's own wheels only: enough for the CLI, in seconds
    if [ ! -d /tmp/site/psutil ]; then
        PIP_CONFIG_FILE=/dev/null $PY -m pip install --isolated -q --no-cache-dir --only-binary=:all: \
            --no-index --find-links .whl-tpu --target /tmp/site psutil threadpoolctl cloudpickle babel
    fi
}

atlas() {  # the atlas in $OUT, resumed from $ATLAS_FROM (carry its folder), stopped by Ctrl-C at ATLAS_UNTIL s
    local seed=${ATLAS_FROM:-device-state/atlas-tpu.json.gz} file="$OUT/atlas-tpu.json.gz"
    [ -f "$seed" ] && cp "$seed" "$file"
    # A cell over ATLAS_CELL_TIMEOUT is recorded as past its deadline: one that outlasts a device call would
    # otherwise be cut short by the call's end every time (float64 cumsum compiles 148 s, three times a cell).
    # Well under a call's length, so that a call started after other parts still reaches it (at 400 s a call's
    # atlas of 392 s measured and marked nothing).
    step atlas atlas timeout -s INT "$(( ${ATLAS_UNTIL:-560} - SECONDS ))" "$PY" -m jaxcompare atlas --devices tpu \
        --out "$file" --db "$OUT/atlas.sqlite3" --timeout "${ATLAS_CELL_TIMEOUT:-240}" ${ATLAS_ARGS:-}
}

cli() {
    local jc=("$PY" -m jaxcompare)
    step cli list "${jc[@]}" list
    step cli import "${jc[@]}" import tests/data/tpu/device-check.json --db "$DB"
    step cli run-x32-docs "${jc[@]}" run --case centered_gram --shape 1000x1000 --save --db "$DB" \
        --json "$OUT/run-x32-docs.json"
    step cli run-x64-inv "${jc[@]}" run --case inv --shape 200x200 --precision x64 --quick
    step cli run-x64-docs "${jc[@]}" run --case centered_gram --shape 1000x1000 --precision x64 --quick \
        --save --db "$DB"
    step cli run-profile "${jc[@]}" run --case matmul --shape 2048x2048 --quick --profile /tmp/trace
    step cli pitfalls "${jc[@]}" pitfalls --case centered_gram --shape 1000x1000 --json "$OUT/pitfalls.json"
    step cli sweep "${jc[@]}" sweep --case matmul --quick --save --db "$DB"
    step cli history "${jc[@]}" history --db "$DB"
}

for part in "$@"; do
    case $part in
        setup) step setup setup setup ;;
        engine) step setup engine engine ;;
        check) step check device-check "$PY" benchmarks/device_check.py --out "$OUT/check" \
                   --budget "${CHECK_BUDGET:-390}" ;;
        cli) cli ;;
        ports) ports ;;
        atlas) atlas ;;
        probe) step probe kept-probe env -u MALLOC_MMAP_THRESHOLD_ -u MALLOC_TRIM_THRESHOLD_ \
                   "$PY" benchmarks/tpu_kept_probe.py ;;
        samples) step probe kept-samples-probe "$PY" benchmarks/tpu_kept_samples_probe.py ;;
        # Twice: as a plain process, and with the one variable the worker sets before JAX starts.
        b2b) step b2b b2b-probe "$PY" benchmarks/tpu_b2b_probe.py
             step b2b b2b-probe-worker-env env XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" benchmarks/tpu_b2b_probe.py ;;
        # shellcheck disable=SC2086  # HAND_ARGS: e.g. "--cases layernorm:4096x1024"
        hand) step hand hand-protocol "$PY" benchmarks/hand_protocol.py --keep "$OUT/hand" \
                  --json "$OUT/hand-protocol.json" ${HAND_ARGS:-} ;;
        # The PNG export test draws through vl-convert on the host's CPU, not the device, and its
        # 33 MB wheel does not fit beside the others in what a call can carry.
        pages) step pages apptest "$PY" -m pytest -n 0 -p no:cacheprovider --timeout 600 \
                   tests/test_app.py tests/test_pitfalls_page.py tests/test_i18n_pages.py \
                   --deselect tests/test_i18n_pages.py::test_a_chinese_png_export_draws_every_glyph ;;
        *) echo "unknown part: $part (setup engine check cli hand pages ports atlas probe b2b samples)" >&2; exit 2 ;;
    esac
done
