# Sourced by scripts/demo.sh, scripts/test.sh and .ci/run: installs the Debian packages the
# project needs when one is missing (as root, or through sudo): libssl-dev (TLS), python3-venv
# (the live test server's venv), openssl (test certificates), freetds-bin and freetds-dev
# (the FreeTDS comparison tests), iproute2 (ss, for the CLI keep-alive test). Set SQLCLIENT_NO_APT=1 to skip.
sqlclient_install_debian_packages() {
    [ "${SQLCLIENT_NO_APT:-0}" = 1 ] && return 0
    command -v apt-get >/dev/null 2>&1 || return 0
    local need=()
    dpkg -s libssl-dev >/dev/null 2>&1 || need+=(libssl-dev)
    dpkg -s freetds-bin >/dev/null 2>&1 || need+=(freetds-bin)
    dpkg -s freetds-dev >/dev/null 2>&1 || need+=(freetds-dev)
    command -v openssl >/dev/null 2>&1 || need+=(openssl)
    command -v python3 >/dev/null 2>&1 || need+=(python3)
    python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
    command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
    command -v ss >/dev/null 2>&1 || need+=(iproute2)   # ss: the CLI keep-alive test reads the socket's timer
    [ "$#" -gt 0 ] && need+=("$@")
    [ "${#need[@]}" -eq 0 ] && return 0
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "missing packages: ${need[*]} (install them as root)" >&2; return 1; }
        sudo="sudo"
    fi
    echo "installing ${need[*]}" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
}
