/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ohca_* trace functions, generated from ../trace-events (meson.build). */
#include "hw/ohca/trace-hw_ohca.h"
