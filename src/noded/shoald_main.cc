// shoald: the node daemon; see noded/shoald.h.
#include "noded/shoald.h"

int main(int argc, char** argv) { return shoal::noded::ShoaldMain(argc, argv); }
