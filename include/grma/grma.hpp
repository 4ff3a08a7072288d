// Everything a grma program needs.
#pragma once

#include "grma/config.hpp"
#include "grma/error.hpp"
#include "grma/rank.hpp"
#include "grma/runtime.hpp"
#include "grma/settings.hpp"
#include "grma/topology.hpp"
#include "grma/types.hpp"
