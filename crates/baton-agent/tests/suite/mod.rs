mod gate;
