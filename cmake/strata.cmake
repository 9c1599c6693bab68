# strata_test(NAME SOURCES... LIBS ...) builds one GoogleTest binary and
# registers its tests with CTest (discovered when ctest runs, not at build
# time, so that building stays cheap on a 2-core machine).
function(strata_test name)
  if(NOT STRATA_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  # gtest_discover_tests flattens PROPERTIES into one list: a value holding
  # ';' would split into stray property names (a second ENVIRONMENT entry
  # once swallowed LABELS that way), so each value here is a single item.
  set(props ENVIRONMENT "STRATA_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if(ARG_LABELS)
    list(APPEND props LABELS "${ARG_LABELS}")
  endif()
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES ${props})
endfunction()
