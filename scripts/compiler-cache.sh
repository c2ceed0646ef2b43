# Sourced by run-main.sh and run-tests.sh (from the repository root): sets compiler_launcher to the
# CMake options that compile through ccache when it is installed, and to nothing otherwise.
# ccache keeps compiled objects between runs on one machine, so a second clean clone rebuilds in
# minutes; CCACHE_BASEDIR hashes the clone's own paths relative to it, so clones share the hits.
# With debug info (the debug preset's -g) ccache also hashes the build directory unless told not
# to (CCACHE_NOHASHDIR); an object reused from another clone then names that clone's directory in
# its debug info, which only changes where a debugger or a sanitizer report looks for sources.
compiler_launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD"
  export CCACHE_NOHASHDIR=true
  compiler_launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
