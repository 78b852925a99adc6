// shoal-stepd: supervisor of one batch job; see noded/stepd.h.
#include "noded/stepd.h"

int main(int argc, char** argv) { return shoal::noded::StepdMain(argc, argv); }
