// What the fuzz targets share: which exceptions a hostile reply may raise (the ones the core
// turns into Python's RedisError family and ValueError), everything else being a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "errors.hpp"

namespace rlb::fuzz {

// Runs `body`; an exception of the project's own kinds is an answer to bad input, any other
// (std::out_of_range from an .at(), std::length_error, std::bad_alloc...) aborts: a finding.
template <class Body>
void expect_only_project_errors(Body&& body) {
  try {
    body();
  } catch (const RedisError&) {
  } catch (const InvalidArgument&) {
  } catch (const std::exception& error) {
    std::fprintf(stderr, "unexpected exception %s: %s\n", typeid(error).name(), error.what());
    std::abort();
  }
}

}  // namespace rlb::fuzz
