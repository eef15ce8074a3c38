#!/bin/sh
# Builds pod and tests/binary's test binary, then boots the guest that tests/vm/build.sh made
# (1 vCPU, 2 GiB) with this work tree shared read-only at the same path and $VM/out as /out; the guest runs
# tests/vm/guest.sh and powers off. Its log is $VM/out/guest.log; the console is $VM/console.log.
# The disk is used as a snapshot: every run starts from the same guest.
#   VM=/work/vm tests/vm/run.sh        # the run
#   VM=/work/vm tests/vm/run.sh -i     # a root shell on the serial console instead (Ctrl-a x quits)
set -eu
VM=${VM:-/work/vm}
WT=$(cd "$(dirname "$0")/../.." && pwd)
# TCG unless ACCEL=kvm: on the machine this was written on (a nested AMD EPYC guest) a KVM
# guest hung right after the kernel was loaded, with every -cpu tried.
accel=${ACCEL:-tcg}
cpu=${CPU:-max}
if [ "$accel" = kvm ]; then cpu=${CPU:-host}; fi
extra=""
if [ "${1:-}" = "-i" ]; then extra="pod.interactive=1"; fi
rm -rf "$VM/out"
mkdir -p "$VM/out"
# The guest runs what the host built: pod and tests/binary's test binary (same Debian).
(cd "$WT" && cargo test --test binary --no-run) 2> "$VM/out/build.log" || {
    cat "$VM/out/build.log"
    exit 1
}
sed -n 's/.*Executable tests\/binary\/main.rs (\(.*\))$/\1/p' "$VM/out/build.log" \
    | sed "s|^|$WT/|" > "$VM/out/test-binary"
[ -s "$VM/out/test-binary" ] || { echo "no test binary in $VM/out/build.log"; exit 1; }
set -- qemu-system-x86_64 -machine q35,accel=$accel -cpu $cpu -smp 1 -m 2048 -nographic \
    -no-reboot -snapshot \
    -kernel "$VM/vmlinuz" -initrd "$VM/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 ${QUIET-quiet} systemd.unified_cgroup_hierarchy=1 pod.wt=$WT $extra" \
    -drive file="$VM/disk.img",format=raw,if=virtio \
    -virtfs local,path="$WT",mount_tag=wt,security_model=none,readonly=on \
    -virtfs local,path="$VM/out",mount_tag=out,security_model=none \
    -nic none
if [ -n "$extra" ]; then
    exec "$@"
fi
# A guest that hangs is stopped after ${TIMEOUT:-1200} s (the run fails: no `exit 0` line).
timeout "${TIMEOUT:-1200}" "$@" < /dev/null > "$VM/console.log" 2>&1 || true
cat "$VM/out/guest.log"
tail -1 "$VM/out/guest.log" | grep -qx 'exit 0'
