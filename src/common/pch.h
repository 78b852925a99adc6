// Precompiled for the daemons and the operator (see cmake/Pch.cmake): the
// headers that cost most of each of their sources' compile time. Never included by hand.
#pragma once

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "acct.pb.h"
#include "shoal.pb.h"
