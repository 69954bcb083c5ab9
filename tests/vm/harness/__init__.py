"""The parts of the VM test harness; tests/vm/ohcavm.py is its face (the
names the tests use, and the command line). See ohcavm.py's docstring for
what each module holds and tests/vm/README.md for how to use it."""
