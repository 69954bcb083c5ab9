# fabric/ib: InfiniBand wire formats and agents, shared by the ohca
# device's engine and ohca-switch. Include this file from any CMake
# project; it defines:
#   OHCA_IB_SOURCES      the .cpp files (absolute paths)
#   OHCA_IB_INCLUDE_DIR  the include root: sources say #include "ib/packet.hpp"
#   target ohca_ib       a static library of them (once per project)
# The code is C++20, no exceptions, no RTTI, no allocation per packet.
#
# Meson (the engine's QEMU build): qemu-device/build.sh copies only
# qemu-device/ into QEMU's tree, so it must also copy fabric/ib (for
# example to hw/ohca/fabric/ib, and hash it into the input hash); then
# qemu-device/meson.build lists the same .cpp files as 'fabric/ib/...' and
# adds include_directories('fabric') for the "ib/..." includes.
set(OHCA_IB_DIR ${CMAKE_CURRENT_LIST_DIR})
get_filename_component(OHCA_IB_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
set(OHCA_IB_SOURCES
    ${OHCA_IB_DIR}/crc.cpp
    ${OHCA_IB_DIR}/link.cpp
    ${OHCA_IB_DIR}/mad.cpp
    ${OHCA_IB_DIR}/packet.cpp
    ${OHCA_IB_DIR}/sma.cpp
    ${OHCA_IB_DIR}/vlarb.cpp
)
if(NOT TARGET ohca_ib)
    add_library(ohca_ib STATIC ${OHCA_IB_SOURCES})
    target_include_directories(ohca_ib PUBLIC ${OHCA_IB_INCLUDE_DIR})
    target_compile_features(ohca_ib PUBLIC cxx_std_20)
    target_compile_options(ohca_ib PRIVATE
        -Wall -Wextra -Werror -Wshadow -Wconversion -Wno-sign-conversion
        -fno-exceptions -fno-rtti)
    set_target_properties(ohca_ib PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()
