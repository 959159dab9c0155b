mod gate;
mod responses;
