// C++ workload for the benchmark: containers, virtual calls, strings and algorithms.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

struct Shape {
	virtual ~Shape() = default;
	virtual double area() const = 0;
};
struct Circle : Shape {
	double r;
	explicit Circle(double r_) : r(r_) {}
	double area() const override { return 3.14159 * r * r; }
};
struct Rect : Shape {
	double w, h;
	Rect(double w_, double h_) : w(w_), h(h_) {}
	double area() const override { return w * h; }
};

__attribute__((noinline)) static double total_area(const std::vector<std::unique_ptr<Shape>> &v)
{
	double s = 0;
	for (auto &p : v)
		s += p->area();
	return s;
}

__attribute__((noinline)) static size_t word_counts(int n)
{
	std::unordered_map<std::string, int> m;
	std::map<std::string, int> ordered;
	for (int i = 0; i < n; i++) {
		std::string w = "w" + std::to_string((i * 2654435761u) % 4096);
		m[w]++;
		if (i % 7 == 0)
			ordered[w] += i;
	}
	return m.size() + ordered.size();
}

template <typename T> __attribute__((noinline)) static T sorted_median(std::vector<T> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	/* SECS of CPU time, not of the clock: the same work (and samples) on a busy machine */
	double acc = 0;
	unsigned seed = 1;
	while ((double)std::clock() / CLOCKS_PER_SEC < secs) {
		std::vector<std::unique_ptr<Shape>> shapes;
		for (int i = 0; i < 20000; i++) {
			seed = seed * 1103515245u + 12345u;
			if (seed & 1)
				shapes.emplace_back(new Circle((seed >> 8) % 100));
			else
				shapes.emplace_back(new Rect((seed >> 8) % 50, (seed >> 16) % 50));
		}
		acc += total_area(shapes);
		acc += (double)word_counts(30000);
		std::vector<double> d(50000);
		for (auto &x : d)
			x = (seed = seed * 1103515245u + 12345u) / 7.0;
		acc += sorted_median(d);
	}
	printf("%g\n", acc);
	return 0;
}
