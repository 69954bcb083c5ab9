# Engine fuzzers (included from ../CMakeLists.txt).
#
# OHCA_ENGINE_FUZZ=ON (clang only): fuzz_<name> libFuzzer binaries with
#   ASan + UBSan (the engine library is instrumented too). fuzz/run.sh
#   builds this configuration into build/fuzz and runs it.
# OHCA_ENGINE_FUZZ_REPLAY=ON (default, any compiler): fuzz_<name>_replay
#   programs that run the same entry points over fuzz/corpus/<name> and
#   fuzz/regressions/<name>, registered with ctest as fuzz_replay_<name>.
set(OHCA_FUZZERS cmdq regs rx eth_desc rdma)
set(OHCA_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)

if(OHCA_ENGINE_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "OHCA_ENGINE_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++)")
endif()

if(OHCA_ENGINE_FUZZ OR OHCA_ENGINE_FUZZ_REPLAY)
    enable_testing()
endif()

foreach(f ${OHCA_FUZZERS})
    if(OHCA_ENGINE_FUZZ)
        add_executable(fuzz_${f} ${OHCA_FUZZ_DIR}/fuzz_${f}.cpp)
        target_include_directories(fuzz_${f} PRIVATE ${OHCA_FUZZ_DIR} src)
        target_compile_options(fuzz_${f} PRIVATE -Wall -Wextra -Werror -fsanitize=fuzzer)
        target_link_options(fuzz_${f} PRIVATE -fsanitize=fuzzer)
        target_link_libraries(fuzz_${f} PRIVATE ohca_engine_testing)
    endif()
    if(OHCA_ENGINE_FUZZ_REPLAY)
        add_executable(fuzz_${f}_replay ${OHCA_FUZZ_DIR}/fuzz_${f}.cpp ${OHCA_FUZZ_DIR}/replay.cpp)
        target_include_directories(fuzz_${f}_replay PRIVATE ${OHCA_FUZZ_DIR} src)
        target_compile_options(fuzz_${f}_replay PRIVATE -Wall -Wextra -Werror)
        target_link_libraries(fuzz_${f}_replay PRIVATE ohca_engine_testing)
        add_test(NAME fuzz_replay_${f}
                 COMMAND fuzz_${f}_replay ${OHCA_FUZZ_DIR}/corpus/${f}
                         ${OHCA_FUZZ_DIR}/regressions/${f})
    endif()
endforeach()

# The seed corpus as gen_corpus.py makes it, and the rdma seeds reaching
# the states they are named for (a decoder change drifts them silently).
find_program(OHCA_PYTHON3 python3)
if(OHCA_ENGINE_FUZZ_REPLAY AND OHCA_PYTHON3)
    add_test(NAME fuzz_seeds
             COMMAND ${OHCA_PYTHON3} ${OHCA_FUZZ_DIR}/gen_corpus.py --check
                     $<TARGET_FILE_DIR:fuzz_rdma_replay>)
endif()
