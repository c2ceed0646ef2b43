# CUDA and HIP backends from one source (kernels/gpu/gpu_backend.cu), included by
# kernels/CMakeLists.txt after polnode_kernels exists.
#
#   POLNODE_CUDA = AUTO | ON | OFF   (default AUTO)   nvcc, sm_80 + sm_90, --fmad=false
#   POLNODE_HIP  = AUTO | ON | OFF   (default AUTO)   hipcc, gfx90a + gfx1030, -ffp-contract=off
#
# AUTO builds a backend when its toolchain is found and says so when it is not (a configure
# warning, never silence); ON makes a missing toolchain a configure error; OFF skips it. A built
# backend adds POLNODE_HAVE_CUDA / POLNODE_HAVE_HIP to polnode_kernels' PUBLIC definitions, which
# is what MakeBackend and the tests test for.
#
# CUDA goes through CMake's CUDA language. HIP does not: CMake's HIP language expects a ROCm
# install tree that Debian's packages do not lay out, so hipcc is run by a custom command on the
# same .cu file and its object is added to polnode_kernels. Sanitizers (debug preset) and fuzzer
# flags are added for C/CXX only (cmake/Polnode.cmake), so device code is never instrumented; the
# host code nvcc and hipcc produce links into sanitized binaries like any uninstrumented library.

set(POLNODE_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON (required), OFF")
set_property(CACHE POLNODE_CUDA PROPERTY STRINGS AUTO ON OFF)
set(POLNODE_HIP AUTO CACHE STRING "Build the HIP backend: AUTO (when hipcc is found), ON (required), OFF")
set_property(CACHE POLNODE_HIP PROPERTY STRINGS AUTO ON OFF)
set(POLNODE_HIP_ARCHITECTURES gfx90a gfx1030 CACHE STRING
    "AMD GPU targets for hipcc (Debian's ROCm 5.2 knows no gfx942)")

set(_polnode_gpu_dir ${CMAKE_CURRENT_LIST_DIR})
set(_polnode_gpu_source ${_polnode_gpu_dir}/gpu_backend.cu)

# The determinism flags of each GPU compiler, one per line (# comments), shared with
# scripts/check-gpu-code.sh so that the check inspects exactly what the build compiles.
function(_polnode_read_flags file out)
  file(STRINGS ${file} lines REGEX "^[^#]")
  set(${out} ${lines} PARENT_SCOPE)
endfunction()
_polnode_read_flags(${_polnode_gpu_dir}/nvcc_flags.txt _polnode_nvcc_flags)
_polnode_read_flags(${_polnode_gpu_dir}/hipcc_flags.txt _polnode_hipcc_flags)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${_polnode_gpu_dir}/nvcc_flags.txt ${_polnode_gpu_dir}/hipcc_flags.txt)

# Normalises an AUTO/ON/OFF option (CMake's other spellings of true and false included).
function(_polnode_gpu_mode var)
  string(TOUPPER "${${var}}" value)
  if(value STREQUAL "AUTO")
    set(mode AUTO)
  elseif(value MATCHES "^(ON|YES|TRUE|Y|1)$")
    set(mode ON)
  elseif(value MATCHES "^(OFF|NO|FALSE|N|0)$")
    set(mode OFF)
  else()
    message(FATAL_ERROR "${var} is '${${var}}'; use AUTO, ON or OFF")
  endif()
  set(_polnode_${var}_mode ${mode} PARENT_SCOPE)
endfunction()
_polnode_gpu_mode(POLNODE_CUDA)
_polnode_gpu_mode(POLNODE_HIP)

# The conformance harness compares any two backends, and the AMD target check reads sysfs; both
# are part of the library whether or not a GPU backend is built, so their tests run everywhere. "gpu/..." includes resolve
# from the kernels folder for polnode_kernels and for its users (the tests).
target_sources(polnode_kernels PRIVATE ${_polnode_gpu_dir}/conformance.cc ${_polnode_gpu_dir}/amd_targets.cc
                                      ${_polnode_gpu_dir}/train_check.cc)
target_include_directories(polnode_kernels PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})

set(_polnode_gpu_backends "")

# ---- CUDA --------------------------------------------------------------------------------------
if(NOT _polnode_POLNODE_CUDA_mode STREQUAL "OFF")
  set(_polnode_nvcc "")
  set(_polnode_nvcc_broken FALSE)
  if(CMAKE_CUDA_COMPILER)
    set(_polnode_nvcc ${CMAKE_CUDA_COMPILER})
  else()
    # /opt/polnode-cuda is where install-deps.sh installs nvcc and the CUDA runtime from PyPI's
    # wheels (nvidia-cuda-nvcc, -runtime, -cccl), so CI compiles the CUDA backend without a GPU.
    find_program(POLNODE_NVCC nvcc HINTS ENV CUDA_PATH PATH_SUFFIXES bin
                 PATHS /usr/local/cuda/bin /opt/polnode-cuda/nvidia/cu13/bin)
    if(POLNODE_NVCC)
      set(_polnode_nvcc ${POLNODE_NVCC})
    endif()
  endif()

  if(_polnode_nvcc AND _polnode_POLNODE_CUDA_mode STREQUAL "AUTO" AND NOT CMAKE_CUDA_COMPILER)
    # AUTO must not turn a broken nvcc (e.g. one that rejects the host compiler) into a failed
    # configure: try it in a scratch project first and fall back to a warning.
    include(CheckLanguage)
    set(ENV{CUDACXX} ${_polnode_nvcc})
    set(ENV{CUDAHOSTCXX} ${CMAKE_CXX_COMPILER})
    check_language(CUDA)
    if(NOT CMAKE_CUDA_COMPILER)
      message(WARNING "polnode: CUDA backend skipped: ${_polnode_nvcc} cannot compile a test program "
                      "with host compiler ${CMAKE_CXX_COMPILER} (set POLNODE_CUDA=OFF to silence this)")
      set(_polnode_nvcc "")
      set(_polnode_nvcc_broken TRUE)
    endif()
  endif()

  if(_polnode_nvcc)
    set(CMAKE_CUDA_COMPILER ${_polnode_nvcc})
    if(NOT CMAKE_CUDA_HOST_COMPILER)
      set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    endif()
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    # The CUDA runtime from the compiler's own toolkit tree (a /usr/local/cuda install, or the
    # PyPI wheels install-deps.sh lays out), without FindCUDAToolkit: CMake 3.25's module fails on
    # CUDA 12.9+ and 13 toolkits, which no longer ship nvToolsExt.
    get_filename_component(_polnode_cuda_root "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(_polnode_cuda_root "${_polnode_cuda_root}" DIRECTORY)
    find_library(POLNODE_CUDART cudart HINTS ${_polnode_cuda_root}/lib64 ${_polnode_cuda_root}/lib
                 ${_polnode_cuda_root}/targets/x86_64-linux/lib NO_DEFAULT_PATH)
    if(NOT POLNODE_CUDART)
      message(FATAL_ERROR "polnode: nvcc at ${CMAKE_CUDA_COMPILER} has no libcudart.so beside it "
                          "(looked in ${_polnode_cuda_root}/lib64 and lib)")
    endif()
    add_library(polnode_cudart SHARED IMPORTED)
    set_target_properties(polnode_cudart PROPERTIES IMPORTED_LOCATION ${POLNODE_CUDART}
      INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES}")

    target_sources(polnode_kernels PRIVATE ${_polnode_gpu_source})
    # CMake 3.25 does not know nvcc's C++20 flag (nvcc has had it since 12.0); teach it, so that
    # CUDA_STANDARD 20 works like CXX_STANDARD 20 does for the C++ sources.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    # polnode_kernels existed before CUDA was enabled, so it did not pick up
    # CMAKE_CUDA_ARCHITECTURES.
    set_target_properties(polnode_kernels PROPERTIES
      CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF
      CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}" CUDA_RUNTIME_LIBRARY Shared)
    # Determinism (nvcc_flags.txt) and warnings as errors, as for C++.
    target_compile_options(polnode_kernels PRIVATE
      "$<$<COMPILE_LANGUAGE:CUDA>:${_polnode_nvcc_flags};-Xcompiler=-Wall,-Wextra;-Werror=all-warnings>")
    target_compile_definitions(polnode_kernels PUBLIC POLNODE_HAVE_CUDA)
    target_link_libraries(polnode_kernels PUBLIC polnode_cudart)
    list(APPEND _polnode_gpu_backends cuda)
    message(STATUS "polnode: CUDA backend enabled (${CMAKE_CUDA_COMPILER}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(_polnode_POLNODE_CUDA_mode STREQUAL "ON")
    message(FATAL_ERROR "polnode: POLNODE_CUDA=ON but nvcc was not found (looked in /usr/local/cuda/bin, "
                        "$CUDA_PATH/bin and PATH); install the CUDA toolkit or set POLNODE_CUDA=AUTO/OFF")
  elseif(NOT _polnode_nvcc_broken)
    message(WARNING "polnode: CUDA backend skipped: nvcc not found (looked in /usr/local/cuda/bin, "
                    "$CUDA_PATH/bin and PATH); set POLNODE_CUDA=OFF to silence this")
  endif()
endif()

# ---- HIP ---------------------------------------------------------------------------------------
if(NOT _polnode_POLNODE_HIP_mode STREQUAL "OFF")
  find_program(POLNODE_HIPCC hipcc HINTS ENV ROCM_PATH PATH_SUFFIXES bin PATHS /opt/rocm/bin)
  find_library(POLNODE_AMDHIP64 amdhip64 HINTS ENV ROCM_PATH PATH_SUFFIXES lib PATHS /opt/rocm/lib)
  if(POLNODE_HIPCC AND POLNODE_AMDHIP64)
    set(_polnode_hip_object ${CMAKE_CURRENT_BINARY_DIR}/gpu_hip/gpu_backend.hip.o)
    set(_polnode_hip_arch_flags "")
    foreach(arch IN LISTS POLNODE_HIP_ARCHITECTURES)
      # Always explicit: without --offload-arch hipcc asks rocm_agent_enumerator, which fails on a
      # machine with no AMD GPU (such as CI).
      list(APPEND _polnode_hip_arch_flags --offload-arch=${arch})
    endforeach()
    if(CMAKE_BUILD_TYPE STREQUAL "Debug")
      set(_polnode_hip_opt -O1 -g)
    else()
      set(_polnode_hip_opt -O3)
    endif()
    add_custom_command(
      OUTPUT ${_polnode_hip_object}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/gpu_hip
      # Determinism: hipcc_flags.txt.
      COMMAND ${POLNODE_HIPCC} -c -x hip ${_polnode_hip_arch_flags} -std=c++20 -fPIC ${_polnode_hip_opt}
              ${_polnode_hipcc_flags} -Wall -Wextra -Werror
              -DPOLNODE_HAVE_HIP
              # The targets above, for the runtime check before the first HIP call (amd_targets.h).
              "-DPOLNODE_HIP_TARGETS=$<JOIN:${POLNODE_HIP_ARCHITECTURES}, >"
              # Only the project's own headers: polnode_kernels' include list also carries the CUDA
              # toolkit's, whose headers must not shadow HIP's.
              -I${CMAKE_CURRENT_SOURCE_DIR}/include -I${CMAKE_CURRENT_SOURCE_DIR}
              "-I$<JOIN:$<TARGET_PROPERTY:polnode_base,INTERFACE_INCLUDE_DIRECTORIES>,;-I>"
              -MD -MF ${_polnode_hip_object}.d
              ${_polnode_gpu_source} -o ${_polnode_hip_object}
      DEPENDS ${_polnode_gpu_source} ${_polnode_gpu_dir}/hipcc_flags.txt
      DEPFILE ${_polnode_hip_object}.d
      COMMENT "Compiling gpu_backend.cu as HIP (${POLNODE_HIP_ARCHITECTURES})"
      COMMAND_EXPAND_LISTS
      VERBATIM)
    set_source_files_properties(${_polnode_hip_object} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(polnode_kernels PRIVATE ${_polnode_hip_object})
    target_compile_definitions(polnode_kernels PUBLIC POLNODE_HAVE_HIP)
    target_link_libraries(polnode_kernels PUBLIC ${POLNODE_AMDHIP64})
    list(APPEND _polnode_gpu_backends hip)
    message(STATUS "polnode: HIP backend enabled (${POLNODE_HIPCC}, architectures ${POLNODE_HIP_ARCHITECTURES})")
  else()
    set(_polnode_hip_missing "")
    if(NOT POLNODE_HIPCC)
      list(APPEND _polnode_hip_missing "hipcc (looked in $ROCM_PATH/bin, /opt/rocm/bin and PATH)")
    endif()
    if(NOT POLNODE_AMDHIP64)
      list(APPEND _polnode_hip_missing "libamdhip64 (Debian: libamdhip64-dev)")
    endif()
    list(JOIN _polnode_hip_missing " and " _polnode_hip_missing)
    if(_polnode_POLNODE_HIP_mode STREQUAL "ON")
      message(FATAL_ERROR "polnode: POLNODE_HIP=ON but ${_polnode_hip_missing} not found; "
                          "install hipcc and libamdhip64-dev or set POLNODE_HIP=AUTO/OFF")
    else()
      message(WARNING "polnode: HIP backend skipped: ${_polnode_hip_missing} not found; "
                      "set POLNODE_HIP=OFF to silence this")
    endif()
  endif()
endif()

# The bitwise check as a standalone program (no GoogleTest needed), built with any GPU backend so
# CI compiles and links it; scripts/gpu-check.sh runs it on GPU machines.
if(_polnode_gpu_backends)
  add_executable(polnode_gpu_check ${_polnode_gpu_dir}/gpu_check_main.cc)
  target_link_libraries(polnode_gpu_check PRIVATE polnode_kernels)
  polnode_project_target(polnode_gpu_check)
endif()
set(POLNODE_GPU_BACKENDS "${_polnode_gpu_backends}" CACHE INTERNAL "GPU backends compiled into polnode_kernels")
