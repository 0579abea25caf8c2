//! The guest's boot and agent scripts (busybox sh), written into the
//! initramfs. Part of the image's cache key: changing them rebuilds.
//!
//! Boot: busybox init runs [`RC_S`] (mounts, modules in the order listed in
//! `/etc/lab/modules`, the 9p share at `/lab`, eth0 from the kernel command
//! line's `lab_*` words, `rxe0`, wait for ACTIVE), then respawns [`AGENT`]
//! and a shell on the console.
//!
//! Commands: the host writes `/lab/cmd/ID.sh` and sends `ID\n` on the
//! virtio-serial port `rsndk.lab`; [`RUN_ONE`] runs it in its own session
//! with output in `/lab/out/ID.out` and `ID.err`, and renames `ID.pid` and
//! then `ID.rc` into place (so the host never reads half a file).

/// `/etc/inittab`.
pub const INITTAB: &str = "\
::sysinit:/etc/lab/rcS
::respawn:/etc/lab/agent
::respawn:/bin/cttyhack /bin/sh -l
::ctrlaltdel:/bin/poweroff -f
";

/// `/etc/lab/rcS`: the boot, up to rxe0 ACTIVE.
pub const RC_S: &str = r#"#!/bin/sh
# The lab guest's boot: mounts, modules, the share, eth0, rxe0.
/bin/busybox mount -t proc proc /proc
# The applets go to a directory of their own, last in PATH, so the
# packages' programs (kmod, iproute2's ip) win. Needs /proc/self/exe.
/bin/busybox mkdir -p /usr/libexec/busybox
/bin/busybox --install -s /usr/libexec/busybox
export PATH=/usr/sbin:/usr/bin:/usr/libexec/busybox
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
fail() {
    echo "lab boot failed: $*" >/dev/console
    [ -d /lab/out ] && echo "$*" >/lab/boot-failed
    exit 1
}
arg() {
    for word in $(cat /proc/cmdline); do
        case $word in "$1"=*) echo "${word#*=}" ;; esac
    done
}
release=$(uname -r)
while read -r module; do
    insmod "/lib/modules/$release/$module" || fail "insmod $module"
done </etc/lab/modules
mkdir -p /lab
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 lab /lab || fail "cannot mount the 9p share"
hostname "$(arg lab_name)"
mac=$(arg lab_mac)
dev=
for path in /sys/class/net/*; do
    [ "$(cat "$path/address")" = "$mac" ] && dev=${path##*/}
done
[ -n "$dev" ] || fail "no interface has MAC $mac"
[ "$dev" = eth0 ] || ip link set "$dev" name eth0 || fail "cannot rename $dev to eth0"
for conf in all default eth0; do
    echo 0 >"/proc/sys/net/ipv6/conf/$conf/accept_dad"
done
ip link set lo up
ip link set eth0 mtu 1500 up || fail "eth0 does not come up"
ip addr add "$(arg lab_ip4)" dev eth0 || fail "cannot add $(arg lab_ip4) to eth0"
ip -6 addr add "$(arg lab_ip6)" dev eth0 nodad || fail "cannot add $(arg lab_ip6) to eth0"
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 type rxe netdev eth0 failed"
tries=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -lt 400 ] || fail "rxe0 port 1 is not ACTIVE: $(cat /sys/class/infiniband/rxe0/ports/1/state)"
    sleep 0.05
done
touch /run/lab-booted
"#;

/// `/etc/lab/agent`: reads command ids from the virtio-serial port.
pub const AGENT: &str = r#"#!/bin/sh
# The command agent: one id per line on the port rsndk.lab runs /lab/cmd/ID.sh.
export PATH=/usr/sbin:/usr/bin:/usr/libexec/busybox
[ -e /run/lab-booted ] || exec sleep 2147483647
port=
for path in /sys/class/virtio-ports/*; do
    [ "$(cat "$path/name")" = rsndk.lab ] && port=/dev/${path##*/}
done
if [ -z "$port" ]; then
    echo "no virtio-serial port named rsndk.lab" >/lab/boot-failed
    exec sleep 2147483647
fi
exec 3<"$port"
echo ready >/lab/ready.tmp && mv /lab/ready.tmp /lab/ready
while read -r id <&3; do
    case $id in '' | *[!0-9]*) continue ;; esac
    # Detached (init reaps it), without the port's descriptor.
    (/etc/lab/run-one "$id" 3<&- &)
done
# The port closed: init respawns the agent after this pause.
sleep 1
"#;

/// `/etc/lab/run-one ID`: runs one command in its own session.
pub const RUN_ONE: &str = r#"#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/usr/libexec/busybox
id=$1
out=/lab/out/$id
setsid /bin/sh "/lab/cmd/$id.sh" </dev/null >"$out.out" 2>"$out.err" &
pid=$!
echo "$pid" >"$out.pid.tmp" && mv "$out.pid.tmp" "$out.pid"
wait "$pid"
echo "$?" >"$out.rc.tmp" && mv "$out.rc.tmp" "$out.rc"
"#;

/// `/etc/passwd`: root, and tcpdump's user (tcpdump drops to it unless
/// run with `-Z root`).
pub const PASSWD: &str =
    "root:x:0:0:root:/root:/bin/sh\ntcpdump:x:100:100:tcpdump:/tmp:/bin/false\n";

/// `/etc/group`.
pub const GROUP: &str = "root:x:0:\ntcpdump:x:100:\n";

/// `/etc/profile` for the console shell.
pub const PROFILE: &str = "export PATH=/usr/sbin:/usr/bin:/usr/libexec/busybox\nexport PS1='lab-guest# '\ncd /root 2>/dev/null || cd /\n";

/// Every script, for the image's cache key.
pub fn all() -> [&'static str; 7] {
    [INITTAB, RC_S, AGENT, RUN_ONE, PASSWD, GROUP, PROFILE]
}
