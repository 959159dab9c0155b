mod brief;
