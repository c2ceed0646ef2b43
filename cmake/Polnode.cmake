# Build conventions shared by every polnode target.

# Sanitizers apply to everything we compile (not to the Debian libraries we link).
if(POLNODE_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${POLNODE_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${POLNODE_SANITIZE})
endif()
if(POLNODE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "POLNODE_FUZZ needs clang (use the 'fuzz' preset)")
  endif()
  # Libraries get coverage instrumentation only; the fuzz binary links libFuzzer's main.
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
endif()

# polnode_project_target(TARGET): marks a target as project code: warnings are errors.
# Generated code (protobuf) is not marked, since we do not control what protoc emits.
# GCC 12 at -O2/-O3 reports -Wrestrict on plain std::string concatenation (GCC bug 105329) and
# -Wnull-dereference on paths its own inlining invents; both are off so -Werror stays meaningful.
function(polnode_project_target target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wcast-align -Wformat=2 -Wimplicit-fallthrough -Werror>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>)
  target_link_libraries(${target} PUBLIC Threads::Threads)
endfunction()

# polnode_glob_sources(VAR DIR): the .cc files directly in DIR (not in subfolders), sorted.
function(polnode_glob_sources var dir)
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cc)
  list(SORT sources)
  set(${var} ${sources} PARENT_SCOPE)
endfunction()
