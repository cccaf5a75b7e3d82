package sched
