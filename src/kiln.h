// kiln: a deep-learning compiler in C++ built on Halide. One include for users.
#pragma once

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "autodiff/grad.h"
#include "graph/graph.h"
#include "graph/interpreter.h"
#include "graph/passes/passes.h"
#include "lower/aot.h"
#include "ops/api.h"
#include "ops/op.h"
#include "runtime/compile.h"
#include "runtime/eager.h"
