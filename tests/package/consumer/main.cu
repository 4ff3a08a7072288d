// The same program, compiled by nvcc: its ranks run on a GPU when one is visible.
#include "program.hpp"
