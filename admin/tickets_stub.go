package admin

import "net/http"

func (a *Admin) getTickets(w http.ResponseWriter, r *http.Request) error { return nil }
func (a *Admin) getTicket(w http.ResponseWriter, r *http.Request) error  { return nil }
func (a *Admin) postTicket(w http.ResponseWriter, r *http.Request) error { return nil }
