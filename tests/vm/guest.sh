#!/bin/sh
# Runs in the VM at boot, as root from a plain system service (pod-vm.service: no delegation),
# on a pure cgroup v2 machine with systemd (tests/vm/README.md). $1: the host's work tree (read
# only); /out/test-binary: the path of tests/binary's test binary that run.sh built there.
# Runs pod's process-limit tests in each case below and checks what they leave; prints a
# `case NAME: PASS` or `case NAME: FAIL (why)` line per case and exits 1 when one failed.
set -u
wt=$1
bin=$(cat /out/test-binary)
tests="a_fork_bomb_stops_at_max_processes a_killed_pods_cgroups_are_gone_once_the_next_pod_opens no_process_outlives"
root_scope="systemd-run --scope -p Delegate=yes --quiet --collect"
user_scope="systemd-run --user --scope -p Delegate=yes --quiet --collect"
as_dev="runuser -u dev -- env XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus"
failed=0

echo "kernel: $(uname -r); systemd: $(systemctl --version | head -1)"
echo "this script's cgroup: $(cat /proc/self/cgroup)"
echo "root's cgroup.subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
echo "system.slice's: $(cat /sys/fs/cgroup/system.slice/cgroup.subtree_control)"
app=/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice
echo "dev's app.slice's: $(cat $app/cgroup.subtree_control) (owner $(stat -c %U $app))"
mkdir -p /tmp/check
printf '[sandbox]\nmax_processes = 50\n' > /tmp/check/pod.toml
chmod -R a+rwX /tmp/check

# What `pod check` says of the limit, run as "$@" (a prefix, then pod's own path).
check() {
    (cd /tmp/check && "$@" env XDG_STATE_HOME=/tmp/check/state-$name \
        "$wt/target/debug/pod" check > /out/check-$name.log 2>&1)
    echo "  pod check (exit $?): $(grep -E "processes:|max_processes" /out/check-$name.log | tr -s ' ')"
}

# No cgroup of pod's is left but empty ones of pods that are gone (a test ends by killing its
# pod: its session's cgroup beside its own stays until the next pod opens there, which the kill
# test checks; systemd removes a scope of its own). Polls for up to 10 s (systemd removes a
# finished scope soon after its last process); says what is left.
nothing_live_left() {
    i=0
    while :; do
        live="" dead=0
        for d in $(find /sys/fs/cgroup -name 'pod-[0-9]*' -type d 2>/dev/null); do
            pid=$(basename "$d" | sed 's/^pod-\([0-9]*\).*/\1/')
            procs=$(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null)
            if [ -d "/proc/$pid" ] || [ -n "$procs" ]; then
                live="$live $d"
            else
                dead=$((dead + 1))
            fi
        done
        [ -z "$live" ] && break
        i=$((i + 1))
        if [ $i -ge 100 ]; then
            echo "  left, of a live pod or holding processes:$live"
            return 1
        fi
        sleep 0.1
    done
    echo "  left: $dead empty cgroups of killed pods"
}

# case NAME EXPECT PREFIX…: runs the tests with PREFIX (runuser, systemd-run, env …) in front,
# then checks them: EXPECT is `held` (the limit held in every mode: 3 "spawned N of 200" lines,
# each N < 50, and a killed pod's cgroups gone) or the words the reason for the gap must hold.
case_() {
    name=$1 expect=$2
    shift 2
    echo
    echo "=== case $name: $*"
    out=/out/case-$name.log
    start=$(date +%s)
    # The emulated CPU is many times slower than the host's: the tests' waits are longer.
    "$@" env TMPDIR=/tmp XDG_STATE_HOME=/tmp/state-$name POD_TEST_WAIT_SECS=120 \
        "$bin" --test-threads=1 --nocapture $tests > "$out" 2>&1
    rc=$?
    grep -E "spawned|left by|test result|panicked" "$out" | sed 's/^/  /'
    grep -m1 -o "no per-call process limit.*" "$out" | sed 's/^/  /'
    echo "  ($(($(date +%s) - start)) s, exit $rc)"
    why=""
    [ $rc -eq 0 ] || why="the tests failed (exit $rc)"
    if [ "$expect" = held ]; then
        n=$(grep -c "spawned [0-9]* of 200" "$out")
        [ "$n" -eq 3 ] || why="$why; $n fork bomb runs, not 3"
        grep -q "left by the killed pod" "$out" || why="$why; the kill test did not run"
        grep -q "skipped" "$out" && why="$why; a test was skipped"
    else
        n=$(grep -c "skipped" "$out")
        [ "$n" -eq 2 ] || why="$why; $n tests skipped, not 2"
        grep "no per-call process limit" "$out" | grep -q "$expect" ||
            why="$why; no gap naming \"$expect\""
    fi
    nothing_live_left || why="$why; cgroups of pod's left"
    if [ -z "$why" ]; then
        echo "case $name: PASS"
    else
        echo "case $name: FAIL ($why)"
        failed=1
    fi
}

# 1. Root, each pod in a scope of its own with Delegate=yes: the pod moves into its leaf.
case_ root-delegated held env POD_TEST_WRAP="$root_scope"
check $root_scope
# 2. Root, no delegation: the pods in this plain service's cgroup, or each in a scope without
# Delegate=yes. systemd delegated neither them nor system.slice: the gap, reported.
case_ root-service "not delegated" env
check env
case_ root-scope-undelegated "not delegated" env POD_TEST_WRAP="systemd-run --scope --quiet --collect"
check systemd-run --scope --quiet --collect
# 3. User dev, each pod in a scope of its own with Delegate=yes under dev's manager: its leaf.
case_ user-delegated held $as_dev POD_TEST_WRAP="$user_scope"
check $as_dev $user_scope
# 4. User dev, the test binary and its pods sharing one delegated scope: the session's cgroup
# goes beside it, in dev's app.slice (dev's, enabling pids).
case_ user-shared-scope held $as_dev $user_scope
check $as_dev $user_scope sh -c '"$@"; :' sh
exit $failed
