#!/usr/bin/env bash
# The packaged binary on a bare Debian, as a server or a CI runner gets it: debootstrap makes a
# minimal root (minbase: no Swift, no compiler, no -dev package, no libcurl, no libnghttp2, no
# SQLite library, no CA certificates), the tarball is unpacked into it, and a user who is not root
# runs `pushcamp --version`, `init`, `validate`, `plan`, `rehearse`, `status`, `runs` and `doctor`
# inside it (chroot); doctor must name the missing CA certificates. Then the CI workflow `init`
# writes runs its steps on this machine against a local release mirror on loopback (no network):
# the tarball signed with a throwaway key, installed, checked, and a pull request that passes and
# one that must fail. Then the Docker image is built from the same tarball with podman, on this
# Debian root as its base, and run: its version, its user id, and `serve` healthy (docs/install.md,
# docs/release.md).
#
#   scripts/install-test.sh [TARBALL]   default: the newest dist/pushcamp-*.tar.gz (scripts/package.sh)
#
# Root only (debootstrap, chroot, mounting /proc, podman). About two minutes with a near Debian
# mirror (DEBIAN_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "install-test.sh needs root (debootstrap, chroot)" >&2; exit 1; }
tarball=${1:-$(ls -t dist/pushcamp-*-linux-*.tar.gz 2>/dev/null | head -1)}
[[ -f "$tarball" ]] || { echo "install-test.sh: no tarball; run scripts/package.sh first" >&2; exit 1; }
# debootstrap; what the workflow's steps use (curl, git, ssh-keygen) and the runner that reads it
# (PyYAML); podman and runc for the image.
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v curl >/dev/null || missing+=(curl)
command -v git >/dev/null || missing+=(git)
command -v ssh-keygen >/dev/null || missing+=(openssh-client)
python3 -c 'import yaml' 2>/dev/null || missing+=(python3-yaml)
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
if ((${#missing[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

work=$(mktemp -d /tmp/pushcamp-install-test.XXXXXX)
root="$work/root"
mirror_pid=""
cleanup() {
    [[ -z "$mirror_pid" ]] || kill "$mirror_pid" 2>/dev/null || true
    umount "$root/proc" 2>/dev/null || true
    podman_ rm -f pushcamp-install-test >/dev/null 2>&1 || true
    podman_ rmi -f localhost/pushcamp-install-test localhost/pushcamp-install-test-base >/dev/null 2>&1 || true
    rm -rf "$work"
}
# podman as this machine allows: runc and cgroupfs (crun refuses a host with cgroups v1 and v2
# mounted at once), and the host's resource limits (raising them is refused in a container).
podman_() {
    CONTAINERS_CONF="$work/containers.conf" podman --runtime runc --cgroup-manager=cgroupfs "$@"
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
# The image's base, as debootstrap made it, before anything is installed into it: this machine
# reaches Debian's mirror but not a container registry.
printf '[containers]\ndefault_ulimits = []\n' > "$work/containers.conf"
tar -C "$root" -c . | podman_ import - localhost/pushcamp-install-test-base >/dev/null
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

step "the CI workflow of pushcamp init, against a local release mirror (no network)"
version=$(tar -xzOf "$tarball" --wildcards '*/VERSION' | cut -d' ' -f1)
name=$(basename "$tarball")
mirror="$work/mirror"
mkdir -p "$mirror/v$version"
cp "$tarball" "$mirror/v$version/"
# The publisher's signature (docs/release.md), with a key of this test's own.
ssh-keygen -q -t ed25519 -N '' -C '' -f "$work/release-key"
ssh-keygen -q -Y sign -n pushcamp-release -f "$work/release-key" "$mirror/v$version/$name"
signer="releases@pushcamp $(cut -d' ' -f1,2 "$work/release-key.pub")"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$mirror" "$port" > "$work/mirror.log" 2>&1 &
mirror_pid=$!
url="http://127.0.0.1:$port/v$version/$name"
for _ in $(seq 50); do curl --silent --fail --head "$url" >/dev/null && break; sleep 0.2; done
curl --silent --fail --head "$url" >/dev/null || fail "the release mirror did not start"
expect "Created a Pushcamp project in ci-demo:" pushcamp init ci-demo --release-url "$url" --release-signer "\"$signer\""
project="$work/pull-request"
cp -R "$root/home/ci/ci-demo" "$project"
commit() {
    git -C "$project" -c user.name=install-test -c user.email=test@pushcamp.invalid commit -q -a -m "$1"
}
git -C "$project" init -q -b main && git -C "$project" add -A && commit "the project as init wrote it"

# A pull request that changes the campaign: installed from the mirror (signature, checksum),
# checked, planned, posted.
sed -i 's/^description: .*/description: Say hello, in fewer words/' "$project/campaigns/welcome.yaml"
commit "a new description"
scripts/lib/run-workflow.py "$project/.github/workflows/pushcamp.yml" "$project" "$work/run-1" \
    | tee "$work/run-1.log" || fail "the workflow failed on a good pull request"
grep -qF 'Good "pushcamp-release" signature for releases@pushcamp' "$work/run-1.log" || fail "no signature was checked"
grep -qF "bin/pushcamp: OK" "$work/run-1.log" || fail "the binary's checksum was not checked"
grep -qF "## pushcamp review: 1 campaign" "$work/run-1/comment.md" || fail "no plan was posted"
grep -qF "### Plan: \`welcome\`" "$work/run-1/artifact" || fail "the full plan was not kept"

# A pull request that breaks the audience: half its tokens are not tokens, and the campaign
# allows none. The job must fail, with the plan posted.
printf 'not-a-token,ios,Mallory,true\n<3f1d6f0c 2b9a4e7d>,ios,Trudy,true\n' >> "$project/audiences/welcome.csv"
sed -i 's/^  where: "opted_in".*/  where: "opted_in"\n  max_invalid: 0/' "$project/campaigns/welcome.yaml"
commit "an export gone wrong"
if scripts/lib/run-workflow.py "$project/.github/workflows/pushcamp.yml" "$project" "$work/run-2" > "$work/run-2.log"; then
    cat "$work/run-2.log"
    fail "the workflow passed a pull request whose audience has invalid tokens"
fi
cat "$work/run-2.log"
grep -qF "step failed: Validate and plan" "$work/run-2.log" || fail "the bad pull request failed elsewhere"
grep -qF "more than max_invalid 0 allows" "$work/run-2/comment.md" || fail "the comment does not say why"
! grep -qE "Mallory|Trudy" "$work/run-2/comment.md" "$work/run-2/artifact" || fail "a real value is in the comment"

step "the Docker image, built with podman from the same tarball on this Debian root, and run"
context="$work/image"
mkdir -p "$context/dist"
cp Dockerfile .dockerignore "$context/"
cp "$tarball" "$context/dist/"
podman_ build --quiet --format docker --network host --build-arg BASE=localhost/pushcamp-install-test-base \
    --build-arg VERSION="$version" --build-arg SHA256="$(sha256sum "$tarball" | cut -d' ' -f1)" \
    -t localhost/pushcamp-install-test "$context" >/dev/null || fail "the image does not build"
if podman_ build --quiet --format docker --network host --build-arg BASE=localhost/pushcamp-install-test-base \
    --build-arg VERSION="$version" --build-arg SHA256="$(printf '0%.0s' {1..64})" "$context" >/dev/null 2>&1; then
    fail "the image was built from a tarball whose checksum is not the one given"
fi
podman_ run --rm --no-healthcheck localhost/pushcamp-install-test --version | grep -qF ", release)" || fail "the image's pushcamp"
[[ "$(podman_ run --rm --no-healthcheck --entrypoint id localhost/pushcamp-install-test -u)" == 10001 ]] || fail "the image's user is not 10001"
# serve on the project, mounted, in a network of its own (the health check reaches it on loopback).
served="$work/served"
cp -R "$root/home/ci/demo" "$served"
chown -R 10001:10001 "$served"
podman_ run -d --name pushcamp-install-test --health-interval disable --network none -v "$served:/srv/pushcamp" \
    localhost/pushcamp-install-test >/dev/null 2>&1 || fail "the image does not start"
healthy=no
for _ in $(seq 60); do
    if podman_ healthcheck run pushcamp-install-test >/dev/null 2>&1; then healthy=yes; break; fi
    sleep 0.5
done
[[ $healthy == yes ]] || { podman_ logs pushcamp-install-test; fail "serve in the image never passed its health check"; }
echo "the image serves, healthy, as uid 10001"

echo
echo "install test passed: $(basename "$tarball") runs on a bare Debian bookworm, pinned and signed in CI, and in its image"
