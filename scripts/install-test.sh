#!/usr/bin/env bash
# The packaged binary on a bare Debian, as a server or a CI runner gets it: debootstrap makes a
# minimal root (minbase: no Swift, no compiler, no -dev package, no libcurl, no libnghttp2, no
# SQLite library, no CA certificates), the tarball is unpacked into it, and a user who is not root
# runs `pushcamp --version`, `init`, `validate`, `plan`, `rehearse`, `status`, `runs` and `doctor`
# inside it (chroot); doctor must name the missing CA certificates. The Docker image cannot be
# built on the machines this project is made on; this test stands in for it (docs/install.md).
#
#   scripts/install-test.sh [TARBALL]   default: the newest dist/pushcamp-*.tar.gz (scripts/package.sh)
#
# Root only (debootstrap, chroot, mounting /proc). About a minute with a near Debian mirror
# (DEBIAN_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "install-test.sh needs root (debootstrap, chroot)" >&2; exit 1; }
tarball=${1:-$(ls -t dist/pushcamp-*-linux-*.tar.gz 2>/dev/null | head -1)}
[[ -f "$tarball" ]] || { echo "install-test.sh: no tarball; run scripts/package.sh first" >&2; exit 1; }
if ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
fi

work=$(mktemp -d /tmp/pushcamp-install-test.XXXXXX)
root="$work/root"
cleanup() {
    umount "$root/proc" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fail() {
    echo "install-test.sh: FAILED: $*" >&2
    exit 1
}

step "checksum of $(basename "$tarball")"
(cd "$(dirname "$tarball")" && sha256sum --check --strict "$(basename "$tarball").sha256")

step "a minimal Debian root (debootstrap --variant=minbase bookworm)"
started=$SECONDS
debootstrap --variant=minbase bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
    > "$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
echo "made in $((SECONDS - started)) s"
libraries=$(ls "$root/usr/lib/x86_64-linux-gnu" "$root/lib/x86_64-linux-gnu" 2>/dev/null \
    | grep -E 'libswift|libFoundation|libdispatch|libnghttp2|libsqlite3|libcurl' || true)
[[ -z "$libraries" ]] || fail "the root is not bare: $libraries"
[[ ! -e "$root/opt/swift" && ! -e "$root/usr/bin/swift" ]] || fail "the root has Swift"

step "installed as docs/install.md says: unpacked into /opt, linked into /usr/local/bin"
tar -xzf "$tarball" -C "$root/opt"
install_dir=$(cd "$root/opt" && ls -d pushcamp-*)
ln -s "/opt/$install_dir/bin/pushcamp" "$root/usr/local/bin/pushcamp"
(cd "$root/opt/$install_dir" && sha256sum --check --strict SHA256SUMS)
grep -q "Apache License" "$root/opt/$install_dir/LICENSE" || fail "the release carries no LICENSE"
mount -t proc proc "$root/proc"
chroot "$root" useradd --create-home --shell /bin/sh ci

# Runs a command inside the root as the user `ci`, in /home/ci (or the folder given with -C).
inside() {
    local dir=/home/ci
    if [[ "$1" == -C ]]; then dir=$2; shift 2; fi
    chroot --userspec=ci:ci "$root" /usr/bin/env -i HOME=/home/ci PATH=/usr/local/bin:/usr/bin:/bin \
        /bin/sh -c "cd $dir && $*"
}
# Runs it and checks its output holds `expected` (a fixed string).
expect() {
    local expected=$1
    shift
    local output status=0
    output=$(inside "$@" 2>&1) || status=$?
    printf '%s\n' "$output"
    [[ $status -eq 0 ]] || fail "$* exited $status"
    grep -qF -- "$expected" <<<"$output" || fail "$* did not print: $expected"
}

# Runs it and checks it exits `status` and its output holds `expected` (a fixed string).
expect_status() {
    local wanted=$1 expected=$2
    shift 2
    local output status=0
    output=$(inside "$@" 2>&1) || status=$?
    printf '%s\n' "$output"
    [[ $status -eq $wanted ]] || fail "$* exited $status, not $wanted"
    grep -qF -- "$expected" <<<"$output" || fail "$* did not print: $expected"
}

step "pushcamp --version"
expect ", release)" pushcamp --version
step "pushcamp init"
expect "Created a Pushcamp project in demo:" pushcamp init demo
step "pushcamp validate"
expect "pushcamp.yaml and 1 campaign valid" -C /home/ci/demo pushcamp validate
step "pushcamp plan"
expect "→ APNs sandbox (api.sandbox.push.apple.com)" -C /home/ci/demo pushcamp plan campaigns/welcome.yaml
step "pushcamp rehearse"
expect "delivered 5, failed 0" -C /home/ci/demo pushcamp rehearse campaigns/welcome.yaml
step "pushcamp status and runs on a project that has sent nothing"
expect "Runs being sent or interrupted" -C /home/ci/demo pushcamp status
expect "no runs yet" -C /home/ci/demo pushcamp runs
expect "welcome" -C /home/ci/demo pushcamp runs --rehearsal

step "pushcamp doctor on a machine without the system's certificate authorities (minbase has none)"
if [[ -e "$root/etc/ssl/certs/ca-certificates.crt" ]]; then
    fail "the root has ca-certificates: this step checks the error of a machine without them"
fi
# A real key named as Apple names it, so what fails is TLS's set-up, not the credentials.
mkdir -p "$root/home/ci/keyed"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$root/home/ci/keyed/AuthKey_PUSHCAMP01.p8"
printf 'apps:\n  shop:\n    topic: com.example.shop\n    team_id: TEAMID0001\n    key_id: PUSHCAMP01\n    key_file: AuthKey_PUSHCAMP01.p8\n' \
    > "$root/home/ci/keyed/pushcamp.yaml"
chroot "$root" chown -R ci:ci /home/ci/keyed
expect_status 2 "apt-get install ca-certificates" -C /home/ci/keyed pushcamp doctor

echo
echo "install test passed: $(basename "$tarball") runs on a bare Debian bookworm"
