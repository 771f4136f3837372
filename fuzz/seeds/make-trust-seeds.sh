#!/bin/sh
# Regenerates the seeds of the `sshsig`, `key` and `registry` fuzz targets with the real oracle,
# ssh-keygen: fresh keys of each type bay verifies, signatures under the namespaces bay uses
# (`git` for registry commits, `bay-evidence` for evidence records), the public halves, and a
# registry version in bay's shape. Keys are new on every run, so the seed files change whole.
#
#   sshsig seed:   <message> NUL <armoured signature>
#   key seed:      a `.pub` file, or an allowed-signers file
#   registry seed: `== <file>` lines, each followed by that file's text, and optionally a
#                  `==@ commit` line followed by the raw registry commit (as
#                  `git cat-file commit` prints it), signed by Git with SSH
#
# Run from anywhere: sh fuzz/seeds/make-trust-seeds.sh
set -eu
seeds=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

for type in ed25519 ecdsa rsa; do
    case $type in
        rsa) bits="-b 2048" ;;
        *) bits="" ;;
    esac
    # shellcheck disable=SC2086
    ssh-keygen -q -t "$type" $bits -N '' -C "fuzz-$type" -f "$type"
    cp "$type.pub" "$seeds/key/$type.pub"
    for ns in git bay-evidence; do
        printf 'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nbay: a %s seed for %s\n' \
            "$ns" "$type" >msg
        ssh-keygen -q -Y sign -f "$type" -n "$ns" msg
        { cat msg; printf '\000'; cat msg.sig; } >"$seeds/sshsig/$type-$ns"
        rm msg.sig
    done
done

# An empty message, and a signature with no message before it.
: >empty
ssh-keygen -q -Y sign -f ed25519 -n git empty
{ printf '\000'; cat empty.sig; } >"$seeds/sshsig/empty-message"
cp empty.sig "$seeds/sshsig/signature-only"

# An allowed-signers file with the options bay knows.
{
    printf '# allowed signers\n'
    printf 'agent-7@bay namespaces="bay-evidence" %s\n' "$(cut -d' ' -f1,2 ed25519.pub)"
    printf 'alice,!bob cert-authority %s\n' "$(cut -d' ' -f1,2 ecdsa.pub)"
    printf '"runner a" valid-after="20260101" %s laptop\n' "$(cut -d' ' -f1,2 rsa.pub)"
} >"$seeds/key/allowed-signers"

# Registry versions: one with every class and a removal, one minimal.
ssh-keygen -q -t ed25519 -N '' -f old
{
    printf '== registry\nadmin %s\n' "$(cut -d' ' -f1,2 ed25519.pub)"
    printf '== agent\nagent-7 %s\n' "$(cut -d' ' -f1,2 ecdsa.pub)"
    printf '== executor\n'
    printf '== producer\nci %s\n' "$(cut -d' ' -f1,2 rsa.pub)"
    printf '== reviewer\n== approver\n'
    printf '== removed\nagent agent-6 revoked 2026-10-17T19:30:02Z %s\n' "$(cut -d' ' -f1,2 old.pub)"
} >"$seeds/registry/every-class"
printf '== registry\nadmin %s\n' "$(cut -d' ' -f1,2 ed25519.pub)" >"$seeds/registry/first-version"

# A first registry commit, signed by Git (namespace `git`) with its own `registry` key.
git init -q repo
printf 'admin %s\n' "$(cut -d' ' -f1,2 ed25519.pub)" >repo/registry
git -C repo add registry
git -C repo -c user.name=bay -c user.email=bay@example.invalid -c gpg.format=ssh \
    -c user.signingKey="$work/ed25519" commit -q -S -m "bay: enrol registry admin"
{
    printf '== registry\n'
    cat repo/registry
    printf '==@ commit\n'
    git -C repo cat-file commit HEAD
} >"$seeds/registry/signed-first-commit"
