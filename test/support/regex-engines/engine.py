# Python's re, searched as the jsonschema package does. Reads the pattern, then one name a line,
# each as hex code points; writes 1 (found) or 0 for each name, or "error <why>" if it does not compile.
import re
import sys

lines = sys.stdin.read().split("\n")[:-1]


def decode(line):
    return "".join(chr(int(c, 16)) for c in line.split())


try:
    pattern = re.compile(decode(lines[0]))
except re.error as error:
    print(f"error {error}")
    sys.exit(0)
for line in lines[1:]:
    print("1" if pattern.search(decode(line)) else "0")
