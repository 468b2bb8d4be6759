# superagent — common tasks. `make help` lists them.
GO        ?= go
BIN       ?= bin/superagent
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# The PostgreSQL half of the test suite runs when this is set.
SUPERAGENT_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export SUPERAGENT_TEST_DATABASE_URL

.PHONY: help run build test test-sqlite lint bench bench-scale contracts

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

run: ## run the service on the embedded SQLite default (./data)
	$(GO) run ./cmd/superagent serve

build: ## build a static binary into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/superagent

test: ## run every test on SQLite and PostgreSQL
	$(GO) test -count=1 ./...

test-sqlite: ## run the tests without PostgreSQL
	SUPERAGENT_TEST_DATABASE_URL= $(GO) test -count=1 ./...

lint: ## vet and golangci-lint
	$(GO) vet ./...
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...

bench: ## measured figures, with ratios against baselines taken in the same run
	@command -v bwrap >/dev/null 2>&1 || echo "make bench: bubblewrap is not installed, so the sandbox's benchmarks and the lone request's figure are skipped (apt-get install bubblewrap slirp4netns)"
	$(GO) run ./internal/bench
	$(GO) test -run '^$$' -bench 'BenchmarkActionOf|BenchmarkParseGitHub' -benchmem ./webhooks
	$(GO) test -run '^$$' -bench 'BenchmarkPack' -benchmem ./internal/bodycodec
	$(GO) test -run '^$$' -bench 'BenchmarkAssemble' -benchmem ./promptparts
	$(GO) test -run '^$$' -bench 'BenchmarkStep' -benchmem -benchtime 1000x ./session
	$(GO) test -run '^$$' -bench 'BenchmarkRun' -benchtime 200x ./executor/workspace
	$(GO) test -run '^$$' -bench 'BenchmarkCheckpoint' -benchtime 50x ./executor/workspace
	$(GO) test -run '^$$' -bench 'BenchmarkGoTestCycle' -benchtime 1x -timeout 60m ./executor/workspace
	@echo "== where people wait (issue 22), on SQLite and PostgreSQL"
	@$(call figures,-run 'TestLoneRequestLatency' ./cmd/superagent,lone request)
	@$(call figures,-run 'TestBurstIsRoutedInOneBatch' ./orchestrator,burst of 30)

bench-scale: ## serve and two workers on PostgreSQL run 200 Tickets (sandbox on); throughput per process count
	@export SUPERAGENT_SCALE_TICKETS=$${SUPERAGENT_SCALE_TICKETS:-200}; $(call figures,-timeout 60m -run 'TestScaleOut' ./cmd/superagent,Tickets|per process)

# figures runs `go test -v` with the given arguments and prints the lines
# that name the figure, any test skipped, and the end of the output if the
# test failed.
figures = out=$$($(GO) test -count=1 -v $(1) 2>&1); status=$$?; \
	echo "$$out" | grep -E "^=== RUN|^ *--- SKIP|$(2)"; \
	[ $$status -eq 0 ] || { echo "$$out" | tail -40; exit $$status; }

# The suites whose tests talk to the fakes (internal/testkit), which hold
# every request, answer and webhook payload to the platforms' descriptions.
CONTRACT_SUITES ?= ./internal/githubapp ./internal/feishu ./outbox ./webhooks ./people ./executor ./orchestrator \
	./admin ./cmd/superagent/internal/doctor ./cmd/superagent/internal/setup ./cmd/superagent
CONTRACT_COVERAGE ?= $(CURDIR)/.contract-coverage

contracts: ## run the suites on the fakes, one package at a time, and write docs/contracts.md
	rm -rf $(CONTRACT_COVERAGE) && mkdir -p $(CONTRACT_COVERAGE)
	for p in $(CONTRACT_SUITES); do \
		SUPERAGENT_CONTRACT_COVERAGE=$(CONTRACT_COVERAGE) $(GO) test -count=1 -p 1 $$p || exit 1; \
	done
	$(GO) run ./internal/testkit/contractdoc -coverage $(CONTRACT_COVERAGE) -out docs/contracts.md
