#include "eth_switch.hpp"
