#include "ops/op_test_util.h"
