package tickets

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/superagent-dev/superagent/internal/db"
)

// ticketStates are the states superagent_tickets reports, each even at
// zero, so that a dashboard's series exist before the first Ticket.
var ticketStates = []string{TicketOpen, TicketWorking, TicketWaiting, TicketPaused, TicketInReview, TicketDone, TicketCancelled}

var ticketsDesc = prometheus.NewDesc("superagent_tickets",
	"Tickets by state, read from the database when scraped (the same figure from every process).", []string{"state"}, nil)

// StateCollector reports the number of Tickets in each state. It counts
// in the database at scrape time, so every process reports the whole
// service's Tickets, and a scrape the database cannot answer within two
// seconds leaves the series out rather than stalling.
type StateCollector struct{ d *db.DB }

// NewStateCollector returns a collector over d.
func NewStateCollector(d *db.DB) *StateCollector { return &StateCollector{d: d} }

// Describe implements prometheus.Collector.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- ticketsDesc }

// Collect implements prometheus.Collector.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.count(ctx)
	if err != nil {
		return // /readyz tells of a database that does not answer
	}
	for _, s := range ticketStates {
		ch <- prometheus.MustNewConstMetric(ticketsDesc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}

func (c *StateCollector) count(ctx context.Context) (map[string]int64, error) {
	rows, err := c.d.Query(ctx, "SELECT state, COUNT(*) FROM tickets GROUP BY state")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]int64{}
	for rows.Next() {
		var (
			state string
			n     int64
		)
		if err := rows.Scan(&state, &n); err != nil {
			return nil, err
		}
		counts[state] = n
	}
	return counts, rows.Err()
}
