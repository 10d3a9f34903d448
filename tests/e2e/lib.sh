#!/bin/bash
# What the end-to-end tests under systemd share (tests/e2e/run, tests/e2e/launcher): whether
# systemd can be booted here (each "no" a skip, exit 77, with the reason), the test's own
# cgroup, the scratch directory $W and the teardown, the helpers (ns, prop, wait_for, fail,
# ok, servers) and boot_systemd, which boots systemd as PID 1 in new namespaces through
# ns-init with what the test staged in $W/stage. Sourced after the caller set here, top,
# bindir, workparent and keep; the caller defines its own checks.
# shellcheck shell=bash disable=SC2015,SC2016,SC2317,SC2034 # a && b || fail; polls; handlers; used by callers

skip() { echo "SKIP: $*"; exit 77; }
log() { printf '[%6.1fs] %s\n' "$(elapsed)" "$*"; }

start_ms=${EPOCHREALTIME/./}
start_ms=$((start_ms / 1000))
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
elapsed() { local n; n=$(now_ms); printf '%d.%d' $(((n - start_ms) / 1000)) $(((n - start_ms) % 1000 / 100)); }

# ---------------------------------------------------------------------------------------
# Can we boot systemd here at all? Every "no" is a skip with the reason.

[ "$(id -u)" = 0 ] || skip "not root: booting systemd as PID 1 in new namespaces needs root"
for c in unshare nsenter setpriv mount systemd-sysusers systemctl journalctl; do
        command -v "$c" >/dev/null || skip "$c not found"
done
[ -x /lib/systemd/systemd ] || skip "/lib/systemd/systemd not found (the systemd package)"
[ -x /lib/systemd/systemd-journald ] || skip "/lib/systemd/systemd-journald not found"
case $(/lib/systemd/systemd --version 2>/dev/null | sed -n '1s/^systemd \([0-9]*\).*/\1/p') in
'' | [0-9] | [0-9][0-9] | 1[0-9][0-9] | 2[0-3][0-9] | 24[0-9]) skip "systemd 250 or later needed" ;;
esac
unshare --help 2>/dev/null | grep -q -- --kill-child || skip "unshare has no --kill-child (util-linux too old)"
setpriv --help 2>/dev/null | grep -q -- --pdeathsig || skip "setpriv has no --pdeathsig (util-linux too old)"

for b in mcpvisord mcpvisorctl mcpvisor-demo-server; do
        if [ ! -x "$bindir/$b" ]; then
                echo "FAIL: $bindir/$b not found: build first (cmake --build build)"
                exit 1
        fi
done
# Built with ASan (build-asan)? LeakSanitizer needs ptrace, which the unit's
# SystemCallFilter=@system-service refuses: leak checks are off inside the service (they
# stay on for the mcpvisorctl runs of the test itself).
asan=0
grep -q -a -e libasan.so -e __asan_init "$bindir/mcpvisord" && asan=1

if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
        cgmnt=/sys/fs/cgroup
elif [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
        cgmnt=/sys/fs/cgroup/unified
else
        skip "no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified (systemd needs one)"
fi
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
[ -n "$own" ] || skip "this process is in no cgroup2 cgroup (/proc/self/cgroup)"
own=${own%/}
cgparent=$cgmnt$own
[ -d "$cgparent" ] || skip "our cgroup $own is not visible at $cgparent (a cgroup namespace?)"

# Removes a cgroup subtree bottom-up, once nothing runs in it; bounded.
cg_remove() {
        local dir=$1 deadline=$(($(now_ms) + ${2:-5000})) busy d
        [ -d "$dir" ] || return 0
        while :; do
                busy=$(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | head -1)
                [ -z "$busy" ] && break
                [ "$(now_ms)" -ge "$deadline" ] && { echo "run: cgroup $dir still has processes ($busy)" >&2; return 1; }
                sleep 0.05
        done
        while :; do
                find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
                [ -d "$dir" ] || return 0
                [ "$(now_ms)" -ge "$deadline" ] && { echo "run: cannot remove cgroup $dir" >&2; return 1; }
                sleep 0.05
        done
}

# Cgroups left by a run that was SIGKILLed (its pid is in the name); empty ones only.
for d in "$cgparent"/mcpvisor-e2e.*; do
        [ -d "$d" ] || continue
        kill -0 "${d##*.}" 2>/dev/null || cg_remove "$d" 1000 || true
done

cg=$cgparent/mcpvisor-e2e.$$
mkdir "$cg" 2>/dev/null || skip "cannot create a cgroup under $cgparent (no cgroup2 delegation to us)"

# A host of the hybrid layout (the memory and pids controllers on cgroup v1 hierarchies at
# /sys/fs/cgroup/CONTROLLER, a cgroup2 tree without controllers at /sys/fs/cgroup/unified):
# the namespace gets the same layout, so systemd runs in hybrid mode and MemoryMax= and
# TasksMax= act there. The namespace's root in each v1 hierarchy is a cgroup of the test's
# own, mcpvisor-e2e.PID beside the cgroup2 one, below this process's cgroup there; nothing
# above it is touched. name=systemd is the v1 hierarchy systemd also mounts in hybrid mode.
# v1cgs lists them; ns-init mounts the hierarchies named in E2E_CGROUP_V1.
v1cgs=
E2E_CGROUP_V1=
v1_cgroup() {
        local c=$1 own d
        [ "$(stat -f -c %T "/sys/fs/cgroup/$c" 2>/dev/null)" = cgroupfs ] || return 1
        own=$(sed -n "s/^[0-9]*:\(name=\)\{0,1\}$c://p" /proc/self/cgroup)
        [ -n "$own" ] && [ -d "/sys/fs/cgroup/$c${own%/}" ] || return 1
        for d in "/sys/fs/cgroup/$c${own%/}"/mcpvisor-e2e.*; do
                [ -d "$d" ] || continue
                kill -0 "${d##*.}" 2>/dev/null || cg_remove "$d" 1000 || true
        done
        mkdir "/sys/fs/cgroup/$c${own%/}/mcpvisor-e2e.$$" 2>/dev/null || return 1
        v1cgs="$v1cgs /sys/fs/cgroup/$c${own%/}/mcpvisor-e2e.$$"
}
if [ "$cgmnt" = /sys/fs/cgroup/unified ] && v1_cgroup memory && v1_cgroup pids && v1_cgroup systemd; then
        E2E_CGROUP_V1="memory pids systemd"
fi
export E2E_CGROUP_V1

W=
upid=
p1=
failures=0

# alive PID: PID exists and has not exited (a zombie has).
alive() {
        local st
        st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [ "${st%% *}" != Z ]
}
# wait_gone PID MS: until PID has exited, within MS.
wait_gone() {
        local deadline=$(($(now_ms) + $2))
        while alive "$1"; do
                [ "$(now_ms)" -ge "$deadline" ] && return 1
                sleep 0.05
        done
}

teardown() {
        local rc=$?
        trap - EXIT INT TERM HUP
        if [ "$keep" = 1 ] && [ -n "$p1" ] && alive "$p1"; then
                timeout 10 nsenter -t "$p1" -a journalctl --no-pager -o short-monotonic >"$W/journal.txt" 2>&1
        fi
        # The whole PID namespace dies with its PID 1, and the mount namespace with it;
        # unshare reaps it and exits.
        [ -n "$p1" ] && kill -KILL "$p1" 2>/dev/null
        declare -F client_close >/dev/null && client_close 1 >/dev/null 2>&1
        if [ -n "$upid" ]; then
                [ -z "$p1" ] && kill -KILL "$upid" 2>/dev/null # --kill-child ends the rest
                wait_gone "$upid" 5000 || kill -KILL "$upid" 2>/dev/null
                wait "$upid" 2>/dev/null
        fi
        cg_remove "$cg" 10000 || rc=1
        for d in $v1cgs; do cg_remove "$d" 10000 || rc=1; done
        if [ -n "$W" ] && [ -d "$W" ]; then
                if [ "$keep" = 1 ]; then
                        echo "run: kept $W"
                else
                        rm -rf -- "$W"
                fi
        fi
        exit "$rc"
}
trap teardown EXIT
trap 'exit 1' INT TERM HUP

mkdir -p "$workparent" && W=$(mktemp -d "$(cd "$workparent" && pwd)/e2e.XXXXXX") ||
        { echo "FAIL: cannot make a scratch directory in $workparent"; exit 1; }
# mount(8) may create /run/mount/ for its utab: never on the host.
export LIBMOUNT_UTAB=$W/utab

# Namespaces and overlayfs, tried in a throwaway mount namespace first.
mkdir "$W/probe"
if ! err=$(unshare --pid --fork --mount --uts --ipc --net --cgroup --propagation private --mount-proc true 2>&1); then
        skip "cannot create pid/mount/cgroup/uts/ipc/net namespaces: $err"
fi
if ! err=$(unshare --mount --propagation private sh -c '
        mount -t tmpfs tmpfs "$1" && mkdir "$1/l" "$1/u" "$1/w" "$1/m" &&
        mount -t overlay overlay -o "lowerdir=$1/l,upperdir=$1/u,workdir=$1/w" "$1/m"' probe "$W/probe" 2>&1); then
        skip "overlayfs does not work here (the harness overlays /etc and /usr/bin): $err"
fi


# ---------------------------------------------------------------------------------------
# Helpers: run in the namespace, wait with deadlines.

# A command in every namespace of the test's PID 1, with a clean environment.
ns() {
        nsenter -t "$p1" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C SYSTEMD_PAGER= \
                SYSTEMD_COLORS=0 "$@"
}
prop() { ns systemctl show -p "$2" --value "$1" 2>/dev/null; }
props() { ns systemctl show -p ActiveState,SubState,Result,MainPID,NRestarts,ExecMainStatus,StatusText "$1" | tr '\n' ' '; }

# wait_for MS DESCRIPTION COMMAND...: COMMAND until it succeeds, polling every 50 ms.
wait_for() {
        local ms=$1 what=$2 deadline
        shift 2
        deadline=$(($(now_ms) + ms))
        while ! "$@"; do
                if [ "$(now_ms)" -ge "$deadline" ]; then
                        fail "timed out after $((ms / 1000)) s waiting for: $what"
                        return 1
                fi
                sleep 0.05
        done
}

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { log "ok: $*"; }

# Processes in the namespace marked MCPVISOR_SERVER= (servers and what they started):
# "pid ppid name starttime" per line.
servers() {
        ns sh -c 'for d in /proc/[0-9]*; do
                e=$(tr "\0" "\n" <"$d/environ" 2>/dev/null | grep "^MCPVISOR_SERVER=") || continue
                pp=$(sed -n "s/^PPid:[[:space:]]*//p" "$d/status" 2>/dev/null)
                st=$(sed "s/.*) //" "$d/stat" 2>/dev/null | cut -d" " -f20)
                echo "${d#/proc/} $pp ${e#MCPVISOR_SERVER=} $st"
        done'
}

# The client: mcpvisorctl connect as a coprocess, its stdin and stdout on cin and cout.

# ---------------------------------------------------------------------------------------
# Boot.

boot_systemd() {

        log "booting systemd $(/lib/systemd/systemd --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') in new namespaces (cgroup $cg${v1cgs:+; v1:$v1cgs})"
        # In its own cgroup, which becomes the root of its cgroup namespace. Should this script be
        # SIGKILLed, --pdeathsig kills unshare, and --kill-child the namespace's PID 1 with it.
        bash -c 'for d in "$1" $5; do echo $$ >"$d/cgroup.procs" || exit 1; done
                exec setpriv --pdeathsig KILL unshare --kill-child --pid --fork --mount --uts --ipc --net \
                        --cgroup --propagation private --mount-proc "$2" "$3" "$4"' \
                mcpvisor-e2e "$cg" "$here/ns-init" "$W/stage" "$bindir" "$v1cgs" >"$W/pid1.log" 2>&1 </dev/null &
        upid=$!

        find_p1() {
                alive "$upid" || return 0
                p1=$(cut -d' ' -f1 "/proc/$upid/task/$upid/children" 2>/dev/null)
                [ -n "$p1" ]
        }
        booted() {
                local s
                alive "$upid" || return 0
                s=$(ns systemctl is-system-running 2>/dev/null)
                [ "$s" = running ] || [ "$s" = degraded ]
        }
        if ! wait_for 10000 "the namespace's PID 1" find_p1 || [ -z "$p1" ] ||
                ! wait_for 30000 "systemd to boot" booted || ! alive "$upid"; then
                fail "systemd did not boot in the namespace; its output:"
                cat "$W/pid1.log"
                exit 1
        fi
        state=$(ns systemctl is-system-running 2>/dev/null)
        log "systemd is $state (PID 1 is $p1 on the host)"
        [ "$state" = running ] || { fail "system is $state:"; ns systemctl --failed --no-pager; }

}
