#!/usr/bin/env bash
# @brief Exports the pinned third-party sources of bench/engine_ops/pins.yaml into the git-ignored .engine/src/ and
# packs them as .engine/engine_src.tar.xz, the one file a device call carries (`carry: [".engine/engine_src.tar.xz"]`).
# Sources come from local clones when MIRROR_DIR holds <owner>+<name>/repo git dirs (this workplace's fetch tool), else
# from GitHub (a shallow fetch of the pinned commit). Nothing here is committed: the pins are.
#   run:  bash bench/engine_ops/stage_sources.sh            (from the repository root)
set -euo pipefail
root=$(pwd)
dst=$root/.engine/src
mkdir -p "$dst"
mirror=${MIRROR_DIR:-/work/.mirror}

# Each line: name, owner/repo, commit, paths (space-separated, "." = whole tree), target dir
python3 - "$root/bench/engine_ops/pins.yaml" >"$root/.engine/pins.tsv" <<'PY'
import sys, yaml
pins = yaml.safe_load(open(sys.argv[1]))
for name, p in pins.items():
    owner_repo = p["repo"].removeprefix("https://github.com/")
    print("\t".join([name, owner_repo, p["commit"], " ".join(p.get("paths", ["."])), p.get("dir", name)]))
PY

while IFS=$'\t' read -r name owner_repo commit paths dir; do
  out=$dst/$dir
  if [[ -f $out/.pinned && $(cat "$out/.pinned") == "$commit" ]]; then continue; fi
  rm -rf "$out"; mkdir -p "$out"
  gitdir=$mirror/${owner_repo/\//+}/repo
  if [[ -d $gitdir ]] && git -C "$gitdir" cat-file -e "$commit^{commit}" 2>/dev/null; then
    # shellcheck disable=SC2086
    git -C "$gitdir" archive "$commit" $( [[ $paths == . ]] || echo $paths ) | tar -x -C "$out"
  elif [[ $paths != . && $(wc -w <<<"$paths") == 1 && $owner_repo == sgl-project/sglang ]]; then
    # One file of a 1 GB repository: fetch it alone.
    mkdir -p "$out/$(dirname "$paths")"
    curl -fsSL "https://raw.githubusercontent.com/$owner_repo/$commit/$paths" -o "$out/$paths"
  else
    tmp=$(mktemp -d)
    git -C "$tmp" init -q && git -C "$tmp" fetch -q --depth 1 "https://github.com/$owner_repo" "$commit"
    # shellcheck disable=SC2086
    git -C "$tmp" archive FETCH_HEAD $( [[ $paths == . ]] || echo $paths ) | tar -x -C "$out"
    rm -rf "$tmp"
  fi
  echo "$commit" >"$out/.pinned"
  echo "staged $name @ ${commit:0:8} -> .engine/src/$dir"
done <"$root/.engine/pins.tsv"

# Drop what no build reads (docs, figures, sm100-only benchmarks stay: setup.py lists them), then pack.
rm -rf "$dst"/*/docs "$dst"/*/figures "$dst"/*/media
tar -C "$root/.engine" -cJf "$root/.engine/engine_src.tar.xz" src
ls -l "$root/.engine/engine_src.tar.xz"
