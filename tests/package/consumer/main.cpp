#include "program.hpp"
