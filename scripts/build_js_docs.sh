#!/usr/bin/env bash
# Build a documentation site made by a JavaScript framework (Docusaurus, VitePress) from the npm registry alone,
# for the corpus matrix (bench/matrix.py): the recipe bench/sites/NAME/ holds a package.json whose exact versions
# and package-lock.json pin the framework, its config, and `config.docs`, the npm package (name@version) whose
# docs/ folder is the site's content. Its `npm run build` writes the static site to site/.
#
#   scripts/build_js_docs.sh NAME        # prints the built site's directory, .build/sites/NAME/site
#
# Installs nodejs and npm with apt-get when node is missing (root, or sudo); needs Node 18 or later. Idempotent:
# does nothing when the site was built from the same recipe (a hash of its files, kept next to the site).
set -euo pipefail
NAME=${1:?usage: scripts/build_js_docs.sh NAME (a directory of bench/sites)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RECIPE=$ROOT/bench/sites/$NAME
WORK=$ROOT/.build/sites/$NAME
[ -f "$RECIPE/package.json" ] || { echo "no recipe at $RECIPE" >&2; exit 2; }

stamp=$(cd "$RECIPE" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
if [ -f "$WORK/site/index.html" ] && [ "$(cat "$WORK/.recipe" 2>/dev/null)" = "$stamp" ]; then
  echo "$WORK/site"
  exit 0
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  echo "installing nodejs and npm with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || { echo "Node $major is too old: the recipes need Node 18 or later" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK"
cp -r "$RECIPE"/. "$WORK"/
cd "$WORK"
export npm_config_update_notifier=false NO_UPDATE_NOTIFIER=1 DOCUSAURUS_IGNORE_SSG_WARNINGS=true
# Install scripts are not needed to build (core-js's only prints a message); none runs.
nice npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
docs=$(node -p 'require("./package.json").config.docs')
tarball=$(npm pack "$docs" --silent)
mkdir -p docs
tar -xzf "$tarball" -C docs --strip-components=2 package/docs
rm "$tarball"
nice npm run --silent build >&2
[ -f site/index.html ] || { echo "the build wrote no site/index.html" >&2; exit 1; }
echo "$stamp" >.recipe
echo "$WORK/site"
