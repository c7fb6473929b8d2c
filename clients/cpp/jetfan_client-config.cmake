# SPDX-License-Identifier: Apache-2.0
# find_package(jetfan_client): the jetfan handler client, as target jetfan::client.
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include(${CMAKE_CURRENT_LIST_DIR}/jetfan_client-targets.cmake)
