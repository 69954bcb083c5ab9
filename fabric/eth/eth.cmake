# fabric/eth: Ethernet frames (VLAN tags, DSCP/ECN, MAC control / PFC
# frames), shared by the ohca device's engine and ohca-switch. Include
# this file from any CMake project; it defines:
#   OHCA_ETH_SOURCES      the .cpp files (absolute paths)
#   OHCA_ETH_INCLUDE_DIR  the include root: sources say #include "eth/frame.hpp"
#   target ohca_eth       a static library of them (once per project)
# Meson (the engine inside QEMU's tree): qemu-device/build.sh copies
# fabric/eth to hw/ohca/fabric/eth, and qemu-device/meson.build lists the
# same .cpp files as 'fabric/eth/...' (as for fabric/ib, ib.cmake).
set(OHCA_ETH_DIR ${CMAKE_CURRENT_LIST_DIR})
get_filename_component(OHCA_ETH_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
set(OHCA_ETH_SOURCES
    ${OHCA_ETH_DIR}/frame.cpp
)
if(NOT TARGET ohca_eth)
    add_library(ohca_eth STATIC ${OHCA_ETH_SOURCES})
    target_include_directories(ohca_eth PUBLIC ${OHCA_ETH_INCLUDE_DIR})
    target_compile_features(ohca_eth PUBLIC cxx_std_20)
    target_compile_options(ohca_eth PRIVATE
        -Wall -Wextra -Werror -Wshadow -Wconversion -Wno-sign-conversion
        -fno-exceptions -fno-rtti)
    set_target_properties(ohca_eth PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()
