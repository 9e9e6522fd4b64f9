"""CPU-bound Python workload for the benchmark: parsing, dict churn, recursion, sorting."""
import json
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def churn(n):
    d = {}
    for i in range(n):
        d["k%d" % (i % 5000)] = d.get("k%d" % ((i * 7) % 5000), 0) + i
    return sum(d.values())


def parse_and_sort(n):
    doc = json.dumps([{"id": i, "name": "item%05d" % (i * 37 % n), "tags": ["a", "b", str(i)]} for i in range(n)])
    items = json.loads(doc)
    items.sort(key=lambda x: (x["name"], -x["id"]))
    return len(items)


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    # SECS of CPU time, not of the clock: the same work (and samples) on a busy machine
    end = time.process_time() + secs
    total = 0
    while time.process_time() < end:
        total += fib(18) + churn(20000) + parse_and_sort(3000)
    print(total % 1000)


if __name__ == "__main__":
    main()
