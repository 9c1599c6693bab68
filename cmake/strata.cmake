# STRATA_FAST_CHECK_BUILD (the `ci` preset): code whose speed no test or
# benchmark measures in that build (test binaries, benchmarks, examples, the
# pybind11 glue) is compiled with STRATA_FAST_CHECK_FLAGS (-O0 -g1): 2.7x
# less compile time for a GoogleTest file under ASan than -O1 -g. The
# libraries keep the preset's own flags (their speed is what the suites run
# on), and the sanitizers stay on everywhere.
option(STRATA_FAST_CHECK_BUILD "Compile tests, benchmarks, examples and bindings at -O0 -g1" OFF)
set(STRATA_FAST_CHECK_FLAGS -O0 -g1 CACHE STRING "Flags of STRATA_FAST_CHECK_BUILD")
function(strata_fast_check_code target)
  if(STRATA_FAST_CHECK_BUILD)
    target_compile_options(${target} PRIVATE ${STRATA_FAST_CHECK_FLAGS})
  endif()
endfunction()

# Unity builds (CMAKE_UNITY_BUILD, on in the `ci` preset, the fuzz build and
# the pip-install check: a fresh machine compiles each header once per batch
# of files instead of once per file). Test files that reuse another test
# file's helper names in their anonymous namespaces are compiled alone.
set(STRATA_UNITY_ALONE
    groupby_test.cc linalg_test.cc manipulation_extras_test.cc manipulation_test.cc
    map_blocks_test.cc memory_contract_test.cc nan_reductions_test.cc quantiles_test.cc
    reduction_api_test.cc sorting_scans_test.cc reduction_test.cc planner_test.cc
    external_run_test.cc codec_framing_test.cc codec_known_answer_test.cc codec_test.cc
    store_test_util.cc)

# strata_test(NAME SOURCES... LIBS ...) builds one GoogleTest binary and
# registers its tests with CTest (discovered when ctest runs, not at build
# time, so that building stays cheap on a 2-core machine).
function(strata_test name)
  if(NOT STRATA_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  foreach(source ${ARG_SOURCES})
    get_filename_component(file ${source} NAME)
    if(file IN_LIST STRATA_UNITY_ALONE)
      set_source_files_properties(${source} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
  strata_fast_check_code(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  # gtest_discover_tests flattens PROPERTIES into one list: a value holding
  # ';' would split into stray property names (a second ENVIRONMENT entry
  # once swallowed LABELS that way), so each value here is a single item.
  set(props ENVIRONMENT "STRATA_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  # STRATA_PYTHON: the interpreter of the tests that ask numpy or zarr-python
  # (the .venv's, Python_EXECUTABLE); a property of its own, as above.
  if(Python_EXECUTABLE)
    list(APPEND props ENVIRONMENT_MODIFICATION "STRATA_PYTHON=set:${Python_EXECUTABLE}")
  endif()
  if(ARG_LABELS)
    list(APPEND props LABELS "${ARG_LABELS}")
  endif()
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES ${props})
endfunction()
