// SPDX-License-Identifier: MIT
// Umbrella header of atf, the auto-tuning framework.
#pragma once

#include <atf/abort/condition.hpp>
#include <atf/abort/cost.hpp>
#include <atf/abort/duration.hpp>
#include <atf/abort/evaluations.hpp>
#include <atf/abort/fraction.hpp>
#include <atf/abort/improvement.hpp>
#include <atf/configuration.hpp>
#include <atf/constraint.hpp>
#include <atf/error.hpp>
#include <atf/evaluator.hpp>
#include <atf/expr.hpp>
#include <atf/expression_parser.hpp>
#include <atf/log.hpp>
#include <atf/log_lock.hpp>
#include <atf/log_upgrade.hpp>
#include <atf/parameter_file.hpp>
#include <atf/process_cost.hpp>
#include <atf/range.hpp>
#include <atf/search/auc_bandit.hpp>
#include <atf/search/cost_model.hpp>
#include <atf/search/differential_evolution.hpp>
#include <atf/search/exhaustive.hpp>
#include <atf/search/pattern_search.hpp>
#include <atf/search/random.hpp>
#include <atf/search/simulated_annealing.hpp>
#include <atf/search/surrogate.hpp>
#include <atf/search/torczon.hpp>
#include <atf/search_space.hpp>
#include <atf/space_file.hpp>
#include <atf/t4.hpp>
#include <atf/tp.hpp>
#include <atf/tuner.hpp>
#include <atf/value.hpp>
