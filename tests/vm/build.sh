#!/bin/sh
# Builds the guest of the cgroup v2 VM run (tests/vm/README.md): a Debian bookworm folder made
# by debootstrap, with systemd (cgroup v2 only, its default), bubblewrap, perl, python3 and git,
# Debian's kernel, a user `dev` (uid 1000) whose systemd user manager runs from boot (linger),
# and a unit that runs tests/vm/guest.sh from the host's work tree at boot, then powers off.
# Writes $VM/rootfs and $VM/disk.img (default VM=/work/vm); a rootfs already there is reused.
# Needs root, debootstrap, mke2fs and Debian's package mirror.
set -eu
VM=${VM:-/work/vm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ROOT=$VM/rootfs
mkdir -p "$VM"
if [ ! -x "$ROOT/usr/bin/bwrap" ]; then
    rm -rf "$ROOT"
    debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,bubblewrap,strace,git,python3,make,gcc,libc6-dev,perl,procps,util-linux,iproute2,kmod,ca-certificates,less,psmisc \
        bookworm "$ROOT" "$MIRROR"
fi
if ! ls "$ROOT"/boot/vmlinuz-* >/dev/null 2>&1; then
    chroot "$ROOT" /bin/sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends linux-image-amd64 initramfs-tools'
fi

echo pod-vm > "$ROOT/etc/hostname"
printf '/dev/vda / ext4 rw,relatime 0 1\n' > "$ROOT/etc/fstab"
printf '9p\n9pnet_virtio\n' > "$ROOT/etc/modules-load.d/9p.conf"
# No password for root on the serial console, for looking around by hand (run.sh -i).
chroot "$ROOT" passwd -d root >/dev/null
chroot "$ROOT" /bin/sh -c 'id dev >/dev/null 2>&1 || useradd -m -u 1000 -s /bin/bash dev'
mkdir -p "$ROOT/var/lib/systemd/linger"
touch "$ROOT/var/lib/systemd/linger/dev"
# Nothing to wait for on a machine without a network.
chroot "$ROOT" systemctl mask systemd-networkd-wait-online.service >/dev/null 2>&1 || true

cat > "$ROOT/usr/local/sbin/pod-vm-boot" <<'SCRIPT'
#!/bin/sh
# Mounts the host's work tree (at the same path as on the host: the test binaries name pod by
# its absolute path) and the results folder, runs the work tree's tests/vm/guest.sh, powers off.
wt=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^pod\.wt=//p')
interactive=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^pod\.interactive=//p')
mkdir -p "$wt" /out
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288 wt "$wt"
mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=524288 out /out
[ -n "$interactive" ] && exit 0
"$wt/tests/vm/guest.sh" "$wt" > /out/guest.log 2>&1
echo "exit $?" >> /out/guest.log
sync
systemctl poweroff
SCRIPT
chmod 755 "$ROOT/usr/local/sbin/pod-vm-boot"
cat > "$ROOT/etc/systemd/system/pod-vm.service" <<'UNIT'
[Unit]
Description=pod's cgroup v2 VM run (tests/vm)
After=multi-user.target user@1000.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/pod-vm-boot
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
UNIT
chroot "$ROOT" systemctl enable pod-vm.service >/dev/null 2>&1
# A serial console with root logged in, for run.sh -i.
mkdir -p "$ROOT/etc/systemd/system/serial-getty@ttyS0.service.d"
printf '[Service]\nExecStart=\nExecStart=-/sbin/agetty --autologin root --noclear %%I 115200 linux\n' \
    > "$ROOT/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf"

rm -f "$VM/disk.img"
mke2fs -q -t ext4 -d "$ROOT" -L podvm "$VM/disk.img" 6G
cp "$(ls "$ROOT"/boot/vmlinuz-* | tail -1)" "$VM/vmlinuz"
cp "$(ls "$ROOT"/boot/initrd.img-* | tail -1)" "$VM/initrd.img"
echo "built $VM/disk.img"
