# Sourced by the build scripts (tools/build.sh, sanitize_build.sh, cross_build.sh) from the
# repository's root: lets ccache reuse a compile made in another clone of the same sources. ccache
# rewrites the absolute paths under CCACHE_BASEDIR (Meson's unity files include sources by absolute
# path; the cross builds' -I folders are absolute) relative to the build folder, and
# CCACHE_NOHASHDIR keeps the working folder out of the hash, so a clone in /work/a hits what one in
# /srv/b compiled. __FILE__ (GoogleTest's failure locations) is relative on Meson's command lines.
# A value the caller set is kept.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
