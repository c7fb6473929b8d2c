#include "cli.hpp"

int main(int argc, char** argv) { return jetfan::run_cli(argc, argv); }
