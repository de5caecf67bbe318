#!/usr/bin/env bash
# Checks every relative link in README.md, docs/*.md and the READMEs of
# bench/, dpdk-config/ and tests/data/ (or the Markdown
# files given): the file or directory it names exists, and a #fragment
# names a heading of the target (GitHub's anchors: lower case, spaces to
# '-', punctuation other than '-' and '_' dropped). Absolute URLs are not
# fetched. Prints one line per broken link; exit 1 when there is one.
# Before the real files it checks that a file with a broken path and a
# broken anchor is caught, so a checker that finds nothing cannot pass.
set -euo pipefail
cd "$(dirname "$0")/.."

# The anchors of FILE's headings, one a line (outside ``` blocks).
anchors() {
    awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
        tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

# Prints the broken links of the Markdown files given; exit 1 if any.
check() {
    local bad=0 file target path frag dir
    for file in "$@"; do
        dir=$(dirname "$file")
        # [text](target) outside code spans and blocks; image links too.
        while IFS= read -r target; do
            case "$target" in
            http://* | https://* | mailto:* | file://* | man:*) continue ;;
            esac
            path=${target%%#*}
            frag=
            [[ $target == *#* ]] && frag=${target#*#}
            if [ -z "$path" ]; then
                path=$file
            else
                path=$dir/$path
            fi
            if [ ! -e "$path" ]; then
                echo "$file: broken link ($target): no $path"
                bad=1
            elif [ -n "$frag" ] && [[ $path == *.md ]] && ! anchors "$path" | grep -qxF -- "$frag"; then
                echo "$file: broken link ($target): no heading '#$frag' in $path"
                bad=1
            fi
        done < <(awk '/^```/ { code = !code; next } !code' "$file" | sed 's/`[^`]*`//g' |
            grep -o '\]([^) ]*)' | sed 's/^](//; s/)$//')
    done
    return $bad
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '# A title\n\n[ok](#a-title) [gone](missing.md) [bad anchor](#nothing)\n' > "$scratch/t.md"
if [ "$(check "$scratch/t.md" | wc -l)" != 2 ]; then
    echo "check-links: the self-check did not catch both broken links in $scratch/t.md" >&2
    exit 1
fi

files=("$@")
[ ${#files[@]} -gt 0 ] || files=(README.md docs/*.md bench/README.md dpdk-config/README.md tests/data/README.md)
if check "${files[@]}"; then
    echo "check-links: ${#files[@]} files, every relative link resolves"
else
    exit 1
fi
