package webhooks

import (
	"context"

	"github.com/superagent-dev/superagent/internal/db"
)

// StoreTogether stores ds as the committer stores one batch: each read on
// arrival, then all written in one transaction. It returns their ids (0
// for a redelivery).
func (s *Service) StoreTogether(ctx context.Context, ds []Delivery) ([]int64, error) {
	read := make([]*ghEvent, len(ds))
	for i, d := range ds {
		read[i] = s.readOnArrival(d)
	}
	ids := make([]int64, len(ds))
	err := s.d.InTx(ctx, func(tx *db.Tx) error {
		out, err := s.writeDeliveries(ctx, tx, ds, read)
		for i, w := range out {
			ids[i] = w.id
		}
		return err
	})
	return ids, err
}
