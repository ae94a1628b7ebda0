// Why a variant failed: FailureKind lives in core/failure_kind.hpp (every folder uses it, db/ included, which stands
// below gpu/); this header keeps gpu/'s includes as they are.
#pragma once
#include "core/failure_kind.hpp"
