#!/usr/bin/env bash
# @brief Installs what the build, the tests and the plots need; idempotent (apt-get update at most once).
set -euo pipefail
# ccache: the release build, the Python package's build and later runs share compiled objects (scripts/build.sh).
packages=(cmake g++ make ccache clang libclang-rt-14-dev
          libeigen3-dev libyaml-cpp-dev libfmt-dev libboost-program-options-dev doctest-dev
          libzstd-dev zlib1g-dev libbenchmark-dev python3-matplotlib python3-numpy
          openmpi-bin libopenmpi-dev
          python3-venv python3-pip python3-dev python3-pytest python3-pandas python3-zstandard)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all dependencies present" >&2
