#!/usr/bin/env bash
# run_install_test.sh - ctest's "install" test: installs a convfind build into a prefix
# under WORK_DIR, then builds and runs example/example.c against that prefix only:
# with find_package(convfind) (shared and static targets) and with pkg-config (shared,
# and static from `pkg-config --static`), none of which may need CUDA.  With MODULE
# "cuda" (the build made the CUDA backend module) it also builds example_cuda/ against
# find_package(convfind COMPONENTS cuda), which must skip honestly without a GPU; with
# "none" that component must not be found.  Writes nothing outside WORK_DIR except the
# install_manifest.txt that `cmake --install` leaves in BUILD_DIR.
#
# usage: run_install_test.sh BUILD_DIR WORK_DIR EXAMPLE_DIR C_COMPILER LIBDIR cuda|none
#                            [SANITIZE_FLAGS]
set -euo pipefail

if [ $# -lt 6 ]; then
    echo "usage: $0 BUILD_DIR WORK_DIR EXAMPLE_DIR C_COMPILER LIBDIR cuda|none [SANITIZE_FLAGS]" >&2
    exit 2
fi
build=$1 work=$2 example=$3 cc=$4 libdir=$5 module=$6 san_flags=${7:-}
prefix=$work/prefix
example_cuda=$(dirname "$example")/example_cuda
module_file=$prefix/$libdir/libconvfind_cuda.so
# The example must compile warning-free as strict C11 with only the installed headers.
cflags="-std=c11 -Wall -Wextra -Wpedantic -Werror $san_flags"

fail() {
    echo "install test FAILED: $*" >&2
    exit 1
}

rm -rf "$work"
mkdir -p "$work"

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
    { cat "$work/install.log"; fail "cmake --install"; }
while IFS= read -r f; do
    case $f in
    "$prefix"/*) ;;
    *) fail "installed outside the prefix: $f" ;;
    esac
done <"$build/install_manifest.txt"

version=$(sed -n 's/^#define CONVFIND_VERSION_STRING "\(.*\)"$/\1/p' "$prefix/include/convfind_version.h")
[ -n "$version" ] || fail "no CONVFIND_VERSION_STRING in the installed convfind_version.h"
major=${version%%.*}
for f in include/convfind.h include/convfind_version.h \
    "$libdir/libconvfind.a" "$libdir/libconvfind.so.$version" \
    "$libdir/cmake/convfind/convfindConfig.cmake" \
    "$libdir/cmake/convfind/convfindConfigVersion.cmake" \
    "$libdir/pkgconfig/convfind.pc"; do
    [ -f "$prefix/$f" ] || fail "not installed: $f"
done
# The development link and the SONAME link, pointing at the real file.
for link in "libconvfind.so" "libconvfind.so.$major"; do
    [ -L "$prefix/$libdir/$link" ] || fail "not a symlink: $libdir/$link"
    [ "$(readlink -f "$prefix/$libdir/$link")" = "$(readlink -f "$prefix/$libdir/libconvfind.so.$version")" ] ||
        fail "$libdir/$link does not lead to libconvfind.so.$version"
done
dynamic=$(readelf -d "$prefix/$libdir/libconvfind.so.$version")
grep -q "SONAME.*\[libconvfind\.so\.$major\]" <<<"$dynamic" ||
    fail "SONAME of libconvfind.so.$version is not libconvfind.so.$major"
echo "installed convfind $version: headers, libconvfind.so.$major, libconvfind.a, package files"
# The installed library and tool load without CUDA; the module is there iff it was built.
no_gpu=("$prefix/$libdir/libconvfind.so.$version")
[ ! -f "$prefix/bin/convfind" ] || no_gpu+=("$prefix/bin/convfind")
if [ "$module" = cuda ]; then
    [ -f "$module_file" ] || fail "not installed: $libdir/libconvfind_cuda.so"
    [ -f "$prefix/$libdir/pkgconfig/convfind-cuda.pc" ] || fail "not installed: convfind-cuda.pc"
    bash "$(dirname "$0")/../link/check_no_gpu_needed.sh" --module "$module_file" "${no_gpu[@]}" ||
        fail "an installed library or tool depends on CUDA, or the module exports too much"
else
    [ ! -e "$module_file" ] || fail "a CUDA module was installed by a build without one"
    bash "$(dirname "$0")/../link/check_no_gpu_needed.sh" "${no_gpu[@]}" ||
        fail "an installed library or tool depends on CUDA"
fi

# needs_libconvfind EXE: true when EXE loads libconvfind.so from the prefix.  ldd's
# output is taken whole first: `ldd | grep -q` fails under pipefail whenever grep's early
# exit kills ldd with SIGPIPE.
needs_libconvfind() {
    local libs
    libs=$(ldd "$1")
    grep -q "libconvfind\.so\.$major => $prefix/$libdir/" <<<"$libs"
}

# run_example EXE HOW: runs one build of the example, saying how it was linked.
run_example() {
    local name status=0
    name=$(basename "$1")
    echo "-- $name (linked with $2):"
    "$1" || status=$?
    [ "$status" -eq 0 ] || fail "$name (linked with $2) exited with status $status"
}

echo "== find_package(convfind), with CUDA out of reach"
# CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit: the CPU package must not look for CUDA at all.
cmake -S "$example" -B "$work/cmake-build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=TRUE --no-warn-unused-cli \
    >"$work/cmake-configure.log" || { cat "$work/cmake-configure.log"; fail "configuring the example"; }
found=$(sed -n 's/^convfind_DIR:PATH=//p' "$work/cmake-build/CMakeCache.txt")
[ "$found" = "$prefix/$libdir/cmake/convfind" ] || fail "find_package found convfind in '$found'"
cmake --build "$work/cmake-build" >"$work/cmake-build.log" ||
    { cat "$work/cmake-build.log"; fail "building the example with CMake"; }
needs_libconvfind "$work/cmake-build/example_shared" ||
    fail "example_shared does not load the installed libconvfind.so"
! needs_libconvfind "$work/cmake-build/example_static" ||
    fail "example_static loads libconvfind.so although it links convfind::convfind_static"
run_example "$work/cmake-build/example_shared" "convfind::convfind"
run_example "$work/cmake-build/example_static" "convfind::convfind_static"

echo "== pkg-config"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
[ "$(pkg-config --modversion convfind)" = "$version" ] || fail "pkg-config --modversion convfind"
# The install prefix is left out: it may itself contain "cuda" (a build-cuda directory).
pc_flags=$(pkg-config --static --cflags --libs convfind)
! grep -Eiq 'cuda|cudnn' <<<"${pc_flags//$prefix/}" || fail "convfind.pc names CUDA: $pc_flags"
if [ "$module" = cuda ]; then
    [ "$(pkg-config --variable=module convfind-cuda)" -ef "$module_file" ] ||
        fail "convfind-cuda.pc names '$(pkg-config --variable=module convfind-cuda)' as the module"
fi
# shellcheck disable=SC2046,SC2086 # the flags are meant to be split into words
"$cc" $cflags "$example/example.c" -o "$work/example_pkgconfig" $(pkg-config --cflags --libs convfind) -lm ||
    fail "building the example with pkg-config --cflags --libs convfind"
# Static: the archive is picked explicitly, everything else must come from --static.
static_libs=$(pkg-config --static --libs convfind)
# shellcheck disable=SC2046,SC2086
"$cc" $cflags "$example/example.c" -o "$work/example_pkgconfig_static" $(pkg-config --cflags convfind) \
    ${static_libs/-lconvfind/-Wl,-Bstatic -lconvfind -Wl,-Bdynamic} -lm ||
    fail "building the example with pkg-config --static --libs convfind ($static_libs)"
! needs_libconvfind "$work/example_pkgconfig_static" ||
    fail "example_pkgconfig_static loads libconvfind.so"
LD_LIBRARY_PATH=$prefix/$libdir run_example "$work/example_pkgconfig" "pkg-config --libs"
LD_LIBRARY_PATH=$prefix/$libdir needs_libconvfind "$work/example_pkgconfig" ||
    fail "example_pkgconfig does not load the installed libconvfind.so"
run_example "$work/example_pkgconfig_static" "pkg-config --static --libs"

echo "== find_package(convfind COMPONENTS cuda)"
cuda_args=(-S "$example_cuda" -B "$work/cuda-build" -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" -DCMAKE_PREFIX_PATH="$prefix")
if [ "$module" = cuda ]; then
    cmake "${cuda_args[@]}" >"$work/cuda-configure.log" ||
        { cat "$work/cuda-configure.log"; fail "configuring example_cuda"; }
    cmake --build "$work/cuda-build" >"$work/cuda-build.log" ||
        { cat "$work/cuda-build.log"; fail "building example_cuda"; }
    run_example "$work/cuda-build/example_cuda" "convfind::convfind, component cuda"
    echo "install test passed: find_package (shared, static, component cuda) and pkg-config" \
        "(shared, static, convfind-cuda)"
else
    ! cmake "${cuda_args[@]}" >"$work/cuda-configure.log" 2>&1 ||
        fail "find_package(convfind COMPONENTS cuda) succeeded without an installed module"
    echo "find_package(convfind COMPONENTS cuda) fails as it should: no module installed"
    echo "install test passed: find_package (shared, static) and pkg-config (shared, static)"
fi
