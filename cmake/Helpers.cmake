# cct_add_module(NAME <m> SOURCES ... DEPS ...): a static library cct_<m> for lib/<m>.
function(cct_add_module)
  cmake_parse_arguments(M "" "NAME" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(cct_${M_NAME} STATIC ${M_SOURCES})
  target_include_directories(cct_${M_NAME} PUBLIC "${CMAKE_SOURCE_DIR}/lib")
  target_link_libraries(cct_${M_NAME} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  set_property(GLOBAL APPEND PROPERTY CCT_MODULES cct_${M_NAME})
endfunction()

# cct_add_tool(NAME <tool> SOURCES ... DEPS ...): a tool executable, named as the tool.
function(cct_add_tool)
  cmake_parse_arguments(T "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS})
  add_dependencies(long_tests ${T_NAME})
  add_dependencies(fast_tests ${T_NAME})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin")
endfunction()

# cct_add_test(NAME <t> SOURCES ... DEPS ... [LABELS ...] [HEAVY] [COST s] [HEAVY_COST s]): a doctest binary registered with CTest.
# COST / HEAVY_COST: seconds the test (its heavy part) takes on the 2-core CI
# machine; ctest -j starts the longest first, so a clean checkout (no timing
# history) does not leave the longest for last.
# Tests get CCT_REFERENCE_DIR, CCT_SOURCE_DIR and CCT_BIN_DIR as environment variables.
# HEAVY: the binary has test cases in the doctest test suite "heavy" (whole
# networks through code that lighter cases already cover); they are
# registered apart as <t>_heavy with the label "heavy", which the Release
# pass runs and the sanitizer pass skips.
function(cct_add_test)
  cmake_parse_arguments(T "HEAVY" "NAME;COST;HEAVY_COST" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(test_${T_NAME} ${T_SOURCES})
  target_link_libraries(test_${T_NAME} PRIVATE ${T_DEPS} cct_testing doctest::doctest)
  set_target_properties(test_${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
  set(_env "CCT_REFERENCE_DIR=${CCT_REFERENCE_DIR};CCT_SOURCE_DIR=${CMAKE_SOURCE_DIR};CCT_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
  add_test(NAME ${T_NAME} COMMAND test_${T_NAME} --test-suite-exclude=heavy)
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${_env}" LABELS "${T_LABELS}")
  if(T_COST)
    set_tests_properties(${T_NAME} PROPERTIES COST ${T_COST})
  endif()
  if(T_HEAVY OR "slow" IN_LIST T_LABELS)
    add_dependencies(long_tests test_${T_NAME})
  endif()
  if(NOT "slow" IN_LIST T_LABELS)
    add_dependencies(fast_tests test_${T_NAME})
  endif()
  if(T_HEAVY)
    add_test(NAME ${T_NAME}_heavy COMMAND test_${T_NAME} --test-suite=heavy)
    set_tests_properties(${T_NAME}_heavy PROPERTIES ENVIRONMENT "${_env}" LABELS "heavy;${T_LABELS}")
    if(T_HEAVY_COST)
      set_tests_properties(${T_NAME}_heavy PROPERTIES COST ${T_HEAVY_COST})
    endif()
  endif()
endfunction()
