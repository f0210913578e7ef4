# Sourced by the e2e scripts: `e2e_run JSON ARGS...` runs `pearl-bench e2e ARGS...` into JSON;
# `machine_description` names the machine for the reports.
# pearl-bench removes its namespaces itself, also on errors; the trap covers being interrupted.
e2e_run() {
    local json=$1
    shift
    "$target/release/pearl-bench" e2e --pearld "$target/release/pearld" "$@" > "$json.tmp" &
    bench=$!
    trap e2e_cleanup INT TERM
    wait "$bench"
    trap - INT TERM
    mv "$json.tmp" "$json"
}

e2e_cleanup() {
    kill -TERM "$bench" 2>/dev/null || true
    wait "$bench" 2>/dev/null || true
    for ns in $(ip netns list | awk -v p="e2$bench" 'index($1, p) == 1 {print $1}'); do
        ip netns pids "$ns" | xargs -r kill -KILL
        ip netns del "$ns"
    done
    rm -rf "$json.tmp" "${TMPDIR:-/tmp}/e2$bench-pearld"
    exit 130
}

# One line naming the machine, for the reports: the CPU ratios at large frames depend on it.
machine_description() {
    local model family hypervisor
    model=$(lscpu | sed -n 's/^Model name: *//p')
    family=$(lscpu | sed -n 's/^CPU family: *//p')
    hypervisor=$(lscpu | sed -n 's/^Hypervisor vendor: *//p')
    echo "$(nproc) CPUs of ${model:-an unknown model} (family ${family:-?})${hypervisor:+ in a $hypervisor guest}, Linux $(uname -r)"
}
